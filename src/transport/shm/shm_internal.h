// SHM transport internals (tests include this): the POSIX shared-memory segment wrapper and the transport
// class. The receiver of a connection creates the segment (FIFO control page + data, see host_fifo.h) and
// sends its name; the sender maps it and unlinks the name, so a crash after setup leaks nothing. A rank
// killed during setup runs no cleanup: whichever survivor finds an unfinished connection's peer dead unlinks
// every segment that peer created (unlinkSegmentsOf), so a name never outlives the job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "transport/transport.h"

namespace braid {

// RAII: one mapping of a POSIX shm object; unmaps on destruction and unlinks the name if this side
// created it and nobody unlinked it yet.
// The NUMA node of the GPU at PCI bus id `busId` (sysfs), -1 when unknown (no GPU, one node, no sysfs).
int gpuNumaNode(int64_t busId);

// The NUMA node of the page at `addr` (get_mempolicy), -1 when the kernel does not say.
int pageNumaNode(const void* addr);

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment() { reset(); }
  ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates a segment of `bytes` under a fresh unique name, reserving its memory up front (posix_fallocate:
  // an unreserved tmpfs page would SIGBUS on first touch when /dev/shm is full). `peer` names the rank the
  // segment is for, in messages. ncclSystemError naming /dev/shm, the bytes needed and free when it fails.
  // numaNode >= 0: the pages are reserved on that NUMA node where it has room (the GPU that reads them, so
  // its copies out of the segment cross no socket link); else where the calling thread runs.
  static ncclResult_t create(size_t bytes, int peer, ShmSegment* out, int numaNode = -1);
  // Maps an existing segment by name; `bytes` must match the creator's size.
  static ncclResult_t open(const char* name, size_t bytes, int peer, ShmSegment* out);

  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Removes the name (mappings stay valid). Idempotent.
  void unlink();
  void reset();

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;  // created here: unlink on reset unless done
  bool unlinked_ = false;
};

// "/braid-<pid>-<counter>-<random>": unique across processes, communicators and restarts.
std::string makeShmName();
// Unlinks every segment in /dev/shm that process `pid` named (makeShmName); returns how many. Only for a
// process known dead: its names are orphans, and a peer that has one mapped keeps the mapping.
int unlinkSegmentsOf(int pid);

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "SHM"; }
  TransportKind kind() const override { return TransportKind::Shm; }
  bool canConnect(const PeerInfo& me, const PeerInfo& peer) const override;
  ncclResult_t setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel, size_t buffBytes,
                     Connector* conn, ConnectHandle* myHandle) override;
  ncclResult_t connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) override;
};

Transport* shmTransport();

}  // namespace braid
