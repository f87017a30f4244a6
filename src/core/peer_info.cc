// Local identity for PeerInfo, and process liveness of peers we can observe (same pid namespace).
#include "core/peer_info.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/log.h"
#include "core/param.h"

namespace braid {

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// PF_EXITING in /proc/<pid>/stat's flags (include/linux/sched.h): set as do_exit() begins.
constexpr unsigned long long kPfExiting = 0x4;

std::string readFirstLine(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

std::string linkTarget(const char* path) {
  char buf[256];
  ssize_t n = readlink(path, buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

// Once per (pid, errno) in a row, so a long shortage does not flood the log.
void warnLivenessUnknown(const PeerInfo& peer, int err) {
  static std::atomic<uint64_t> last{0};
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(peer.pid)) << 32) | static_cast<uint32_t>(err);
  if (last.exchange(key) == key) return;
  BRAID_WARN(
      "cannot check whether rank %d (pid %d) is alive: reading /proc/%d/stat failed: %s (a local resource "
      "shortage, not the peer); taking it as alive",
      peer.rank, peer.pid, peer.pid, strerror(err));
}

}  // namespace

void fillLocalPeerInfo(PeerInfo* info) {
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  snprintf(info->hostName, sizeof(info->hostName), "%s", host);
  std::string boot = readFirstLine("/proc/sys/kernel/random/boot_id");
  // Ranks in different network namespaces of one machine talk over sockets (that is how the netns tests
  // and containers with private networks behave); so the net namespace is part of "host".
  // NCCL_HOSTID names the host instead, as in NCCL: ranks of one machine with different values act as nodes.
  const std::string hostId = params::HostId();
  info->hostHash = hostId.empty() ? fnv1a(std::string(host) + "|" + boot + "|" + linkTarget("/proc/self/ns/net"))
                                  : fnv1a("NCCL_HOSTID|" + hostId);
  info->pidNsHash = fnv1a(boot + "|" + linkTarget("/proc/self/ns/pid"));
  struct stat st {};
  info->shmDevHash = stat("/dev/shm", &st) == 0 ? fnv1a(boot + "|" + std::to_string(st.st_dev)) : 0;
  info->pid = static_cast<int32_t>(getpid());
}

bool procStatSaysExiting(const std::string& stat) {
  // A killed child stays a zombie until its parent reaps it: treat state Z/X as dead. Before that, the
  // kernel closes the process's sockets and shared mappings while it is still exiting (state R or D, flag
  // PF_EXITING): a neighbour that sees the connection close and aborts in turn can make a third rank look
  // at this one in that window, so an exiting process counts as dead too.
  size_t close = stat.rfind(')');  // the command name may itself hold ')' and spaces
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  if (state == 'Z' || state == 'X') return true;
  // Fields after the state: ppid, pgrp, session id, tty_nr, tpgid, flags.
  unsigned long long flags = 0;
  if (sscanf(stat.c_str() + close + 2, "%*c %*d %*d %*d %*d %*d %llu", &flags) != 1) return false;
  return (flags & kPfExiting) != 0;
}

bool peerProcessAlive(const PeerInfo& me, const PeerInfo& peer) {
  if (me.pidNsHash != peer.pidNsHash || peer.pid <= 0) return true;
  if (peer.pid == me.pid) return true;
  if (kill(peer.pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", peer.pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT || err == ESRCH) return false;
    // Our own shortage (EMFILE, ENFILE, ENOMEM, ...) says nothing about the peer: kill() found it, so it
    // counts as alive, and the reason is said instead of a false "gone".
    warnLivenessUnknown(peer, err);
    return true;
  }
  char buf[512];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (n < 0) {
    if (err == ESRCH) return false;
    warnLivenessUnknown(peer, err);
    return true;
  }
  buf[n] = '\0';
  std::string stat(buf);
  size_t nl = stat.find('\n');
  if (nl != std::string::npos) stat.resize(nl);
  return !stat.empty() && !procStatSaysExiting(stat);
}

}  // namespace braid
