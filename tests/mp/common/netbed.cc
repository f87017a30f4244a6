// The multi-node test bed: namespaces, bridge, veth pairs, netem, and their teardown. See netbed.h.
#include "mp/common/netbed.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mp {
namespace {

constexpr const char* kNetnsDir = "/var/run/netns";   // where `ip netns` keeps its namespaces
constexpr const char* kUtsDir = "/run/braid-netbed";  // our UTS namespace files (bind mounts)
constexpr const char* kPrefix = "bbed";               // every name of a bed starts with this and its pid

std::atomic<int> gSequence{0};

// The pid in a name "bbed<pid>s<seq>...", or -1.
long ownerPid(const char* name) {
  if (std::strncmp(name, kPrefix, std::strlen(kPrefix)) != 0) return -1;
  char* end = nullptr;
  long pid = std::strtol(name + std::strlen(kPrefix), &end, 10);
  return (end && *end == 's' && pid > 0) ? pid : -1;
}

bool processGone(long pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// A test process that was killed (SIGKILL, a CI timeout) could not run its destructors: remove what beds of
// dead processes left behind, so they neither pile up nor hold addresses.
void sweepStale() {
  if (DIR* d = ::opendir(kNetnsDir)) {
    while (dirent* e = ::readdir(d)) {
      long pid = ownerPid(e->d_name);
      if (pid > 0 && processGone(pid)) shellStatus(std::string("ip netns del ") + e->d_name);
    }
    ::closedir(d);
  }
  if (DIR* d = ::opendir(kUtsDir)) {
    while (dirent* e = ::readdir(d)) {
      long pid = ownerPid(e->d_name);
      if (pid <= 0 || !processGone(pid)) continue;
      std::string path = std::string(kUtsDir) + "/" + e->d_name;
      ::umount2(path.c_str(), MNT_DETACH);
      ::unlink(path.c_str());
    }
    ::closedir(d);
  }
}

}  // namespace

int shellStatus(const std::string& cmd, std::string* out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::string text;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int st = ::pclose(p);
  if (out) *out = text;
  if (st == -1) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

NetBed::NetBed(int nodes, LinkShape shape) : nodes_(nodes) {
  prefix_ = std::string(kPrefix) + std::to_string(::getpid()) + "s" + std::to_string(gSequence++);
  if (nodes < 1 || nodes > 200) {
    why_ = "node count " + std::to_string(nodes) + " out of range (1..200)";
    return;
  }
  ok_ = build(shape);
  if (!ok_) teardown();
}

NetBed::~NetBed() { teardown(); }

std::string NetBed::hostName(int node) const { return "braid-node" + std::to_string(node); }
std::string NetBed::address(int node) const { return "10.91.0." + std::to_string(node + 1); }
std::string NetBed::netnsName(int node) const { return prefix_ + "n" + std::to_string(node); }
std::string NetBed::netnsPath(int node) const { return std::string(kNetnsDir) + "/" + netnsName(node); }
std::string NetBed::bridgePort(int node) const { return "port" + std::to_string(node); }
std::string NetBed::utsPath(int node) const { return std::string(kUtsDir) + "/" + netnsName(node) + ".uts"; }

bool NetBed::step(const std::string& cmd) {
  std::string out;
  int rc = shellStatus(cmd, &out);
  if (rc == 0) return true;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  why_ = "`" + cmd + "` failed (status " + std::to_string(rc) + "): " + out;
  return false;
}

bool NetBed::build(const LinkShape& shape) {
  if (::geteuid() != 0) {
    why_ = "not running as root (network namespaces need CAP_SYS_ADMIN)";
    return false;
  }
  if (shellStatus("ip -V") != 0) {
    why_ = "the ip tool (iproute2) is not available";
    return false;
  }
  if (shellStatus("unshare --help | grep -q -- --uts") != 0) {
    why_ = "util-linux's unshare (with --uts) is not available";
    return false;
  }
  sweepStale();
  const std::string br = bridgeNetns();
  if (!step("ip netns add " + br)) {
    why_ = "cannot make a network namespace (no CAP_SYS_ADMIN or no netns support): " + why_;
    return false;
  }
  made_.push_back(br);
  if (!step("ip -n " + br + " link add br0 type bridge") || !step("ip -n " + br + " link set br0 up")) return false;
  if (shape.any() && shellStatus("tc -V") != 0) {
    why_ = "link shaping asked for, but the tc tool is not available";
    return false;
  }
  if (::mkdir(kUtsDir, 0755) != 0 && errno != EEXIST) {
    why_ = std::string("mkdir ") + kUtsDir + ": " + std::strerror(errno);
    return false;
  }
  for (int k = 0; k < nodes_; ++k) {
    const std::string ns = netnsName(k), port = bridgePort(k);
    if (!step("ip netns add " + ns)) return false;
    made_.push_back(ns);
    // One veth pair per node, made directly in the two namespaces (no name ever lives in ours).
    if (!step("ip link add " + std::string(linkName()) + " netns " + ns + " type veth peer name " + port + " netns " +
              br) ||
        !step("ip -n " + br + " link set " + port + " master br0") ||
        !step("ip -n " + br + " link set " + port + " up") ||
        !step("ip -n " + ns + " addr add " + address(k) + "/24 dev " + linkName()) ||
        !step("ip -n " + ns + " link set " + linkName() + " up") || !step("ip -n " + ns + " link set lo up"))
      return false;
    if (shape.any()) {
      std::string args;
      if (!shape.delay.empty()) args += " delay " + shape.delay;
      if (!shape.rate.empty()) args += " rate " + shape.rate;
      if (!step("tc -n " + ns + " qdisc add dev " + linkName() + " root netem" + args)) {
        why_ = "tc netem is not available here (kernel module sch_netem?): " + why_;
        return false;
      }
    }
    // The node's host name lives in a UTS namespace kept by a bind mount, as `ip netns` keeps network ones.
    const std::string uts = utsPath(k);
    int fd = ::open(uts.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
      why_ = "cannot create " + uts + ": " + std::strerror(errno);
      return false;
    }
    ::close(fd);
    if (!step("unshare --uts=" + uts + " hostname " + hostName(k))) {
      ::unlink(uts.c_str());
      return false;
    }
    utsMade_.push_back(uts);
  }
  return waitCarrier();
}

// A veth end reports carrier (LOWER_UP) a moment after both ends are up; a rank that starts before that
// would find its interface without a usable address.
bool NetBed::waitCarrier() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    bool all = true;
    for (int k = 0; k < nodes_ && all; ++k)
      all = shellStatus("ip -n " + netnsName(k) + " -o link show " + linkName() + " | grep -q LOWER_UP") == 0;
    if (all) return true;
    ::usleep(50 * 1000);
  }
  why_ = "the nodes' links did not come up within 5 s";
  return false;
}

void NetBed::teardown() {
  for (const std::string& path : utsMade_) {
    ::umount2(path.c_str(), MNT_DETACH);
    ::unlink(path.c_str());
  }
  utsMade_.clear();
  // Deleting a namespace destroys the veth ends in it, and with each end its peer.
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) shellStatus("ip netns del " + *it);
  made_.clear();
}

bool NetBed::enter(int node, std::string* why) const {
  if (!ok_ || node < 0 || node >= nodes_) {
    *why = "no such node " + std::to_string(node) + (ok_ ? "" : " (the bed was not built: " + why_ + ")");
    return false;
  }
  struct Ns {
    std::string path;
    int type;
  } list[] = {{netnsPath(node), CLONE_NEWNET}, {utsPath(node), CLONE_NEWUTS}};
  for (const Ns& ns : list) {
    int fd = ::open(ns.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *why = "open " + ns.path + ": " + std::strerror(errno);
      return false;
    }
    int rc = ::setns(fd, ns.type);
    int err = errno;
    ::close(fd);
    if (rc != 0) {
      *why = "setns " + ns.path + ": " + std::strerror(err);
      return false;
    }
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  if (hostName(node) != host) {
    *why = std::string("host name after setns is '") + host + "', not " + hostName(node);
    return false;
  }
  return true;
}

bool NetBed::setLinkUp(int node, bool up, std::string* why) const {
  std::string out;
  const std::string cmd = "ip -n " + bridgeNetns() + " link set " + bridgePort(node) + (up ? " up" : " down");
  if (shellStatus(cmd, &out) == 0) return true;
  *why = "`" + cmd + "` failed: " + out;
  return false;
}

}  // namespace mp
