// What each rank tells the others at bootstrap: identity of its host, process and device. Transports
// choose by comparing two PeerInfo values; liveness checks use pid + namespaces.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace braid {

struct PeerInfo {
  int32_t rank;
  int32_t cudaDev;      // -1 for a host communicator
  int64_t busId;        // PCI bus id of the GPU, -1 for host
  uint64_t hostHash;    // hash of hostname + boot id + network namespace: equal => same "host" for SHM
  uint64_t pidNsHash;   // hash of boot id + pid namespace: equal => pid is meaningful to us
  uint64_t shmDevHash;  // hash of /dev/shm's st_dev: equal => SHM segments are shared
  int32_t pid;
  int32_t isHost;       // 1: host-buffer communicator
  char hostName[64];
};
static_assert(std::is_trivially_copyable<PeerInfo>::value, "PeerInfo travels as bytes");

// Fills identity fields for this process (rank/cudaDev/busId/isHost are the caller's).
void fillLocalPeerInfo(PeerInfo* info);

// 64-bit FNV-1a of `s` (continuing from `h`): the identities ranks compare (hosts, namespaces, plugins).
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull);

// True when `peer` can use SHM with `me` (same host and same /dev/shm).
inline bool sameShmDomain(const PeerInfo& me, const PeerInfo& peer) {
  return me.hostHash == peer.hostHash && me.shmDevHash == peer.shmDevHash;
}

// Liveness: returns false only when we can tell for sure the peer process is gone (same pid namespace,
// and /proc/<pid> missing, a zombie, or already exiting). Peers we cannot observe are assumed alive.
bool peerProcessAlive(const PeerInfo& me, const PeerInfo& peer);
// True when a /proc/<pid>/stat line shows a zombie, a dead task or one inside exit (PF_EXITING).
bool procStatSaysExiting(const std::string& statLine);

}  // namespace braid
