// The communicator's members, its init-state check and the channel agreement shared by host and GPU
// communicators (see comm.h).
#include "runtime/comm.h"

#include <algorithm>
#include <vector>

#include "core/bootstrap.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "runtime/executor.h"
#include "runtime/host/progress_table.h"
#include "transport/transport.h"

ncclComm::ncclComm() = default;

ncclComm::~ncclComm() {
  if (initThread.joinable()) initThread.join();
  exec.reset();
  conns.reset();
  if (bootstrap) bootstrap->close();
  bootstrap.reset();
  magic = braid::kCommDeadMagic;
}

void ncclComm::setLastError(const std::string& msg) {
  std::lock_guard<std::mutex> lock(errMu);
  lastError = msg;
}

std::string ncclComm::getLastError() {
  std::lock_guard<std::mutex> lock(errMu);
  return lastError;
}

namespace braid {

ncclResult_t checkInitDone(ncclComm* comm, const char* fn) {
  if (comm->asyncError.load() != ncclInProgress) return ncclSuccess;
  return recordError(ncclInvalidArgument,
                     "%s: rank %d: communicator used before its initialization finished (ncclCommGetAsyncError "
                     "still reports ncclInProgress)",
                     fn, comm->rank);
}

ChannelAgreement mergeChannelOffers(const ChannelOffer* all, int nranks) {
  ChannelAgreement out;
  int64_t chans = all[0].channels;
  bool allNvlink = true, anyShm = false, anyNet = false;
  for (int r = 0; r < nranks; ++r) {
    chans = std::min(chans, all[r].channels);
    allNvlink = allNvlink && all[r].fifoPath == static_cast<int64_t>(FifoPath::kNvlink);
    anyShm = anyShm || all[r].fifoPath == static_cast<int64_t>(FifoPath::kShm);
    anyNet = anyNet || all[r].fifoPath == static_cast<int64_t>(FifoPath::kNet);
  }
  // Network steps keep the default size (their bulk copies and sockets want large steps) wherever they are.
  const FifoPath path = anyNet ? FifoPath::kOther
                        : anyShm ? FifoPath::kShm
                        : allNvlink ? FifoPath::kNvlink
                                    : FifoPath::kOther;
  out.channels = static_cast<int>(std::max<int64_t>(1, chans));
  out.buffDefaulted = all[0].buffBytes < 0;
  out.buffBytes = out.buffDefaulted ? agreedFifoBytes(out.channels, path) : all[0].buffBytes;
  return out;
}

ncclResult_t agreeOnChannels(ncclComm* comm, int64_t preferred, int maxChannels, FifoPath path) {
  const CommConfig& cfg = comm->config;
  int64_t n = preferred;
  int64_t lo = std::max<int64_t>(params::MinNChannels(), params::MinCtas());
  const int64_t hi = foldBounds(envMaxChannels(), cfg.maxChannels);
  if (cfg.minChannels > 0) lo = std::max<int64_t>(lo, cfg.minChannels);
  if (lo > 0) n = std::max(n, lo);
  if (hi > 0) n = std::min(n, hi);
  std::vector<ChannelOffer> all(comm->nranks);
  ChannelOffer& mine = all[comm->rank];
  mine.channels = std::max<int64_t>(1, std::min<int64_t>(n, maxChannels));
  mine.buffBytes = buffSizeSet() ? buffSizeBytes(comm->rank == 0) : -1;
  mine.fifoPath = static_cast<int64_t>(path);
  const ChannelOffer own = mine;
  BRAID_CHECK(comm->bootstrap->allGather(all.data(), sizeof(ChannelOffer)));
  const ChannelAgreement got = mergeChannelOffers(all.data(), comm->nranks);
  comm->nChannels = got.channels;
  comm->buffBytes = got.buffBytes;
  comm->buffBytesDefaulted = got.buffDefaulted;
  // Rank 0's FIFO size holds for all (every connection must cut the same steps): a rank that asked otherwise
  // hears it here rather than finding out from its timings.
  if (own.buffBytes >= 0 && own.buffBytes != got.buffBytes)
    BRAID_WARN("rank %d: NCCL_BUFFSIZE=%lld here, but the FIFOs are %lld bytes: rank 0's %s", comm->rank,
               static_cast<long long>(own.buffBytes), static_cast<long long>(got.buffBytes),
               got.buffDefaulted ? "default (it set no NCCL_BUFFSIZE)" : "NCCL_BUFFSIZE");
  return ncclSuccess;
}

}  // namespace braid
