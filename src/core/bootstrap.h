// Bootstrap: out-of-band TCP exchange between the ranks of a communicator, before and besides any
// transport. ncclGetUniqueId starts a root listener (a thread) whose address and a random key go in the
// unique id; every rank connects to the root, proves it holds the key (a keyed hash of the root's challenge;
// the key itself never travels), and receives the peer table (listen addresses + PeerInfo of all ranks).
// Afterwards ranks message each other directly (tagged, framed, authenticated the same way) through
// per-rank listeners; a background thread accepts and queues incoming messages.
// Every wait is bounded (BRAID_BOOTSTRAP_TIMEOUT) and watches the abort flag and peer liveness.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/peer_info.h"
#include "core/wait.h"
#include "nccl.h"

namespace braid {

constexpr size_t kBootstrapKeyBytes = 16;

// Layout of ncclUniqueId::internal (128 bytes). The magic tells ids of ours from garbage.
struct UniqueIdData {
  uint64_t magic;                   // kUniqueIdMagic
  uint8_t key[kBootstrapKeyBytes];  // random (ncclGetUniqueId, split, shrink), or derived from NCCL_COMM_ID
  uint8_t addr[28];                 // sockaddr_in or sockaddr_in6 of the root listener
  uint32_t addrLen;
  uint32_t flags;  // kIdUnauthenticated
};
constexpr uint64_t kUniqueIdMagic = 0x4272616964496432ull;  // "BraidId2"
// The key was derived from NCCL_COMM_ID alone (no BRAID_JOB_SECRET): anyone who knows the address can
// compute it, so the job is not authenticated.
constexpr uint32_t kIdUnauthenticated = 1u << 0;
static_assert(sizeof(UniqueIdData) <= NCCL_UNIQUE_ID_BYTES, "unique id fits");

// Creates an id and starts its root listener thread (which serves exactly one init, then exits, or times
// out and tells connected ranks which ranks never arrived). With NCCL_COMM_ID set, the id points at that
// address and no root is started here: rank 0 starts it inside bootstrapInit.
ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id);
// Always starts a fresh root on an ephemeral port of the chosen interface, ignoring NCCL_COMM_ID (for
// communicators derived inside the library: ncclCommSplit, ncclCommShrink).
ncclResult_t bootstrapCreateRootId(ncclUniqueId* id);
// Decodes and validates an id (magic); ncclInvalidArgument with a message if it is not one of ours.
ncclResult_t bootstrapParseId(const ncclUniqueId& id, UniqueIdData* out);
// A 64-bit name of the communicator made from the id's key (a keyed hash: it tells nothing of the key).
uint64_t bootstrapCommHash(const UniqueIdData& id);

class Bootstrap {
 public:
  // Connects to the root, exchanges PeerInfo, starts the message listener. `ctx` must outlive the
  // Bootstrap; its peers pointer is set by the caller to `peers()` after this returns.
  static ncclResult_t create(const ncclUniqueId& id, int rank, int nranks, const PeerInfo& mine,
                             const WaitContext* ctx, std::unique_ptr<Bootstrap>* out);
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  virtual const std::vector<PeerInfo>& peers() const = 0;

  // Point-to-point messages, matched by (peer, tag). send does not wait for the receiver to post recv
  // (messages are queued on the receiving side). recv requires the exact size; a size mismatch is
  // ncclInternalError naming both sizes.
  virtual ncclResult_t send(int peer, int tag, const void* data, size_t size) = 0;
  virtual ncclResult_t recv(int peer, int tag, void* data, size_t size) = 0;

  // Collectives over the bootstrap network (ring algorithm). `data` holds nranks slots of `size` bytes,
  // this rank's at slot rank.
  virtual ncclResult_t allGather(void* data, size_t size) = 0;
  virtual ncclResult_t barrier() = 0;
  // Root broadcasts `size` bytes to all.
  virtual ncclResult_t broadcast(void* data, size_t size, int root) = 0;

  // Closes listeners and connections; pending waits return promptly. Idempotent.
  virtual void close() = 0;
};

// Tags below this are free for callers; the bootstrap uses tags >= kBootstrapInternalTag internally.
constexpr int kBootstrapInternalTag = 1 << 30;

}  // namespace braid
