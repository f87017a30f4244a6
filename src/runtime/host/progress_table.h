// The progress table of a host communicator: one word per rank in a small shared-memory segment that every
// rank of the host maps, saying which batch (a sequence number, the same on every rank that issues the same
// calls) the rank is in or finished last, and its collective. A rank updates its own word when a batch starts
// and ends; peers read it without the rank's help, so a rank that stopped (SIGSTOP, a debugger) still shows
// where it stopped. When a wait times out, describe() names the ranks that did not reach this rank's batch
// and each peer's last operation (wait.h StallReporter), instead of only the neighbour that stopped moving.
// Ranks on other hosts are not observable here and are said to be so.
//
// The segment is created by the host's lowest rank under an SHM-convention name (/braid-<pid>-...) and
// unlinked as soon as every local rank has mapped it (a barrier of init): no name outlives init, and if the
// creator dies before that, the survivors unlink its names (unlinkSegmentsOf). The table is best effort: a
// rank that cannot map it runs without it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algo/op_desc.h"
#include "core/wait.h"
#include "nccl.h"

struct ncclComm;

namespace braid {

class ProgressTable final : public StallReporter {
 public:
  enum State : uint32_t { kIdle = 0, kRunning = 1, kDone = 2, kFailed = 3 };
  // One rank's word as published: batch sequence number (1-based; 0: none yet), its first op's collective,
  // whether the batch held several ops, and the state.
  struct Entry {
    uint64_t seq = 0;
    CollType coll = CollType::AllReduce;
    bool multi = false;
    State state = kIdle;
  };
  static uint64_t pack(const Entry& e);
  static Entry unpack(uint64_t w);

  // `words`: nranks words, 64 bytes apart (in shared memory, or any memory for tests); `observable[r]`:
  // rank r publishes into the same words (same host). `pids`: for "stopped" detection (0: unknown).
  ProgressTable(int rank, int nranks, std::atomic<uint64_t>* words, std::vector<uint8_t> observable,
                std::vector<int> pids, std::shared_ptr<void> keepAlive);

  // This rank enters its next batch / leaves it. Two stores each; not on the per-step path.
  void begin(CollType coll, bool multi);
  void end(bool ok);

  Entry read(int r) const;
  std::string describe() const override;
  bool failedOwnOp(int r) const override;

 private:
  std::atomic<uint64_t>& word(int r) const { return words_[static_cast<size_t>(r) * kStride]; }
  static constexpr size_t kStride = 8;  // words per slot: one cache line per rank
  int rank_;
  int nranks_;
  std::atomic<uint64_t>* words_;
  std::vector<uint8_t> observable_;
  std::vector<int> pids_;
  std::shared_ptr<void> keepAlive_;  // the mapping
  uint64_t seq_ = 0;
  Entry cur_;

 public:
  static constexpr size_t kSlotBytes = kStride * sizeof(uint64_t);
};

// Sets up comm's table over the bootstrap (an allgather and a barrier) and points comm->wait at it. Failing
// to create or map the segment only warns: the communicator then runs without the table.
ncclResult_t setupProgressTable(ncclComm* comm);

}  // namespace braid
