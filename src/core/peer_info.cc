// Local identity for PeerInfo, and process liveness of peers we can observe (same pid namespace).
#include "core/peer_info.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace braid {
namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

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

}  // namespace

void fillLocalPeerInfo(PeerInfo* info) {
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  snprintf(info->hostName, sizeof(info->hostName), "%s", host);
  std::string boot = readFirstLine("/proc/sys/kernel/random/boot_id");
  // Ranks in different network namespaces of one machine talk over sockets (that is how the netns tests
  // and containers with private networks behave); so the net namespace is part of "host".
  info->hostHash = fnv1a(std::string(host) + "|" + boot + "|" + linkTarget("/proc/self/ns/net"));
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
  // Fields after the state: ppid pgrp session tty_nr tpgid flags.
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
  std::string stat = readFirstLine(path);
  return !stat.empty() && !procStatSaysExiting(stat);
}

}  // namespace braid
