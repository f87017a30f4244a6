// braidrun's supervisor (see launcher.h). One thread: signals arrive through a self-pipe, so the poll loop
// sees child exits, forwarded signals, rank output and deadlines in one place.
#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braid {
namespace {

constexpr auto kKillGrace = std::chrono::seconds(2);  // SIGTERM → SIGKILL
constexpr int kTimeoutStatus = 124;                   // as timeout(1)
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

int gSignalPipe[2] = {-1, -1};

extern "C" void onSignalHandler(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  // If the pipe is full, enough wake-ups are queued already; dropping this byte loses nothing for SIGCHLD.
  (void)!::write(gSignalPipe[1], &b, 1);
  errno = saved;
}

void installHandler(int sig, void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // SIGCHLD also when a rank stops (reapChildren: a read from the terminal)
  sigaction(sig, &sa, nullptr);
}

// Asks the kernel for a free port by binding port 0. The port is released again before the ranks start;
// rank 0's bootstrap root binds it moments later (the same trick mpirun-style launchers use).
bool pickFreePort(int* port, std::string* error) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = std::string("bind 127.0.0.1:0: ") + std::strerror(errno);
    return false;
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = std::string("getsockname: ") + std::strerror(errno);
    return false;
  }
  *port = ntohs(addr.sin_port);
  return true;
}

bool randomSecret(std::string* secret, std::string* error) {
  UniqueFd f(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  uint64_t v = 0;
  if (!f.valid() || ::read(f.get(), &v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) {
    *error = std::string("/dev/urandom: ") + std::strerror(errno);
    return false;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  *secret = buf;
  return true;
}

void setNonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Launcher::Launcher(LaunchOptions opts) : opts_(std::move(opts)), ranks_(opts_.nranks), parentPid_(::getpid()) {
  if (::pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("braidrun: pipe");
    std::exit(1);
  }
  installHandler(SIGCHLD, onSignalHandler);
  for (int sig : kForwardedSignals) installHandler(sig, onSignalHandler);
  // A reader of our output that goes away must not kill the supervisor (and with it, the job's cleanup).
  installHandler(SIGPIPE, SIG_IGN);
}

Launcher::~Launcher() {
  installHandler(SIGCHLD, SIG_DFL);
  for (int sig : kForwardedSignals) installHandler(sig, SIG_DFL);
  installHandler(SIGPIPE, SIG_DFL);
  for (int& fd : gSignalPipe) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

bool Launcher::prepareJobEnv() {
  std::string error;
  int port = 0;
  if (opts_.netns) {
    bed_ = std::make_unique<mp::NetBed>(opts_.nodes);
    if (!bed_->ok()) {
      std::fprintf(stderr, "braidrun: --netns: cannot make the nodes' namespaces: %s\n", bed_->why().c_str());
      return false;
    }
    if (!pickPortInNode0(&port)) return false;
    commId_ = bed_->address(0) + ":" + std::to_string(port);
  } else {
    if (!pickFreePort(&port, &error)) {
      std::fprintf(stderr, "braidrun: %s\n", error.c_str());
      return false;
    }
    commId_ = "127.0.0.1:" + std::to_string(port);
  }
  if (!randomSecret(&secret_, &error)) {
    std::fprintf(stderr, "braidrun: %s\n", error.c_str());
    return false;
  }
  return true;
}

// Rank 0's bootstrap root listens in node 0's namespace: ask that namespace's kernel for the free port, then
// come back (braidrun is single-threaded, so switching its own namespace for a moment is safe).
bool Launcher::pickPortInNode0(int* port) {
  UniqueFd home(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  UniqueFd node0(::open(bed_->netnsPath(0).c_str(), O_RDONLY | O_CLOEXEC));
  if (!home.valid() || !node0.valid() || ::setns(node0.get(), CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "braidrun: --netns: cannot enter node 0's namespace: %s\n", std::strerror(errno));
    return false;
  }
  std::string error;
  const bool ok = pickFreePort(port, &error);
  if (::setns(home.get(), CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "braidrun: --netns: cannot return to braidrun's namespace: %s\n", std::strerror(errno));
    return false;
  }
  if (!ok) std::fprintf(stderr, "braidrun: --netns: in node 0: %s\n", error.c_str());
  return ok;
}

// Contiguous blocks of nearly equal size: rank r is on node r*K/N.
int Launcher::nodeOf(int rank) const {
  return static_cast<int>(static_cast<long long>(rank) * opts_.nodes / opts_.nranks);
}

// The smallest rank r with r*K/N >= node, i.e. ceil(node*N/K).
int Launcher::firstRankOf(int node) const {
  return static_cast<int>((static_cast<long long>(node) * opts_.nranks + opts_.nodes - 1) / opts_.nodes);
}

int Launcher::run() {
  if (!prepareJobEnv()) return 1;
  for (int r = 0; r < opts_.nranks; ++r) {
    if (!spawn(r)) {
      // Nothing useful can run with a rank missing: stop the ones already started.
      haveFailure_ = true;
      exitStatus_ = 1;
      beginTermination();
      break;
    }
  }
  if (opts_.timeoutSec > 0) {
    timeoutAt_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.timeoutSec));
  }
  loop();
  // The ranks are gone; what their pipes still hold is the last of their output.
  for (Rank& r : ranks_) {
    if (r.out) r.out->drainAndClose();
    if (r.err) r.err->drainAndClose();
  }
  return haveFailure_ ? exitStatus_ : 0;
}

bool Launcher::spawn(int rank) {
  int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
  if (opts_.prefix) {
    if (::pipe2(outPipe, O_CLOEXEC) != 0 || ::pipe2(errPipe, O_CLOEXEC) != 0) {
      std::fprintf(stderr, "braidrun: pipe for rank %d: %s\n", rank, std::strerror(errno));
      for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) {
        if (fd >= 0) ::close(fd);
      }
      return false;
    }
  }
  std::fflush(nullptr);  // the child must not re-emit our buffered output
  pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "braidrun: fork for rank %d: %s\n", rank, std::strerror(errno));
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return false;
  }
  if (pid == 0) execRank(rank, outPipe[1], errPipe[1]);
  // Each rank leads its own process group, so killing it also reaches what it started (e.g. a shell's
  // children). Set here as well as in the child so there is no window where a kill misses the group.
  ::setpgid(pid, pid);
  Rank& r = ranks_[rank];
  r.pid = pid;
  r.alive = true;
  ++liveCount_;
  if (opts_.prefix) {
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    setNonblocking(outPipe[0]);
    setNonblocking(errPipe[0]);
    r.out = std::make_unique<LineForwarder>(rank, UniqueFd(outPipe[0]), STDOUT_FILENO);
    r.err = std::make_unique<LineForwarder>(rank, UniqueFd(errPipe[0]), STDERR_FILENO);
  }
  return true;
}

void Launcher::execRank(int rank, int outFd, int errFd) {
  // Between fork and exec: braidrun is single-threaded, so setenv/fprintf are safe here.
  for (int sig : kForwardedSignals) installHandler(sig, SIG_DFL);
  installHandler(SIGCHLD, SIG_DFL);
  installHandler(SIGPIPE, SIG_DFL);  // SIG_IGN would survive exec
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setpgid(0, 0);
#ifdef __linux__
  // If braidrun itself is SIGKILLed, its ranks must not live on as orphans.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parentPid_) _exit(1);
#endif
  if (outFd >= 0) {
    ::dup2(outFd, STDOUT_FILENO);
    ::dup2(errFd, STDERR_FILENO);
  }
  // Only rank 0 reads the terminal; several ranks racing for stdin would split it unpredictably.
  if (rank != 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::close(devnull);
    }
  }
#ifdef __linux__
  if (opts_.bindCores && opts_.nranks > 1) {
    // Rank r gets the r-th of N equal slices of braidrun's own affinity mask (one CPU each when N equals the
    // CPUs), if the job fits; a lone rank keeps every CPU for its threads (perf tools' -t/-g, Braid's own).
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) >= opts_.nranks) {
      const int per = CPU_COUNT(&allowed) / opts_.nranks;
      cpu_set_t mine;
      CPU_ZERO(&mine);
      int seen = 0;
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        if (seen / per == rank) CPU_SET(cpu, &mine);
        ++seen;
      }
      if (CPU_COUNT(&mine) > 0) ::sched_setaffinity(0, sizeof(mine), &mine);
    }
  }
#endif
  std::string n = std::to_string(opts_.nranks), r = std::to_string(rank);
  std::string localRank = r, localRanks = n;
  if (opts_.nodes > 0) {
    const int node = nodeOf(rank), first = firstRankOf(node);
    localRank = std::to_string(rank - first);
    localRanks = std::to_string(firstRankOf(node + 1) - first);
    if (bed_) {
      std::string why;
      if (!bed_->enter(node, &why)) {
        std::fprintf(stderr, "braidrun: rank %d: cannot enter node %d: %s\n", rank, node, why.c_str());
        std::fflush(stderr);
        _exit(1);
      }
      ::unsetenv("NCCL_HOSTID");  // the nodes' host names and namespaces tell the hosts apart; one id would merge them
    } else {
      ::setenv("NCCL_HOSTID", ("braidrun-node" + std::to_string(node)).c_str(), 1);
    }
  }
  ::setenv("BRAID_RANK", r.c_str(), 1);
  ::setenv("BRAID_NRANKS", n.c_str(), 1);
  ::setenv("BRAID_LOCAL_RANK", localRank.c_str(), 1);
  ::setenv("BRAID_LOCAL_NRANKS", localRanks.c_str(), 1);
  ::setenv("NCCL_COMM_ID", commId_.c_str(), 1);
  ::setenv("BRAID_JOB_SECRET", secret_.c_str(), 1);
  // BRAID_HOST_COMM and everything else the user set pass through untouched.
  std::vector<char*> argv;
  for (std::string& a : opts_.program) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "braidrun: rank %d: cannot execute '%s': %s\n", rank, argv[0], std::strerror(errno));
  std::fflush(stderr);
  _exit(127);
}

int Launcher::pollTimeoutMs() const {
  Clock::time_point next = std::min(timeoutAt_, killAt_);
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
  return static_cast<int>(std::clamp<long long>(ms, 0, 60 * 1000));
}

void Launcher::loop() {
  std::vector<pollfd> fds;
  std::vector<LineForwarder*> owners;
  while (liveCount_ > 0) {
    fds.clear();
    owners.clear();
    fds.push_back({gSignalPipe[0], POLLIN, 0});
    owners.push_back(nullptr);
    for (Rank& r : ranks_) {
      for (LineForwarder* f : {r.out.get(), r.err.get()}) {
        if (f && f->open()) {
          fds.push_back({f->fd(), POLLIN, 0});
          owners.push_back(f);
        }
      }
    }
    int n = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (n < 0 && errno != EINTR) {
      std::perror("braidrun: poll");
      haveFailure_ = true;
      exitStatus_ = 1;
      killLive(SIGKILL);
      killAt_ = Clock::time_point::max();
    }
    if (n > 0) {
      if (fds[0].revents & POLLIN) {
        unsigned char sigs[64];
        ssize_t got;
        while ((got = ::read(gSignalPipe[0], sigs, sizeof(sigs))) > 0) {
          for (ssize_t i = 0; i < got; ++i) onSignal(sigs[i]);
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) owners[i]->onReadable();
      }
    }
    reapChildren();  // also catches exits whose SIGCHLD byte was coalesced away
    Clock::time_point now = Clock::now();
    if (!terminating_ && now >= timeoutAt_) {
      std::fprintf(stderr, "braidrun: timeout after %g s; killing all ranks\n", opts_.timeoutSec);
      haveFailure_ = true;
      exitStatus_ = kTimeoutStatus;
      beginTermination();
    }
    if (now >= killAt_) {
      killLive(SIGKILL);
      killAt_ = Clock::time_point::max();
    }
  }
}

void Launcher::reapChildren() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.pid == pid; });
    if (it == ranks_.end() || !it->alive) continue;
    if (WIFSTOPPED(status)) {
      // Ranks lead their own process groups (so a kill reaches what they start), which are never the
      // terminal's foreground group: a rank reading the terminal stops with SIGTTIN and would hang the job.
      const int sig = WSTOPSIG(status);
      if ((sig == SIGTTIN || sig == SIGTTOU) && !terminating_) {
        std::fprintf(stderr,
                     "braidrun: rank %d stopped on %s: ranks cannot read (or control) the terminal; give the "
                     "program its input from a file or a pipe (e.g. `braidrun ... < input`)\n",
                     static_cast<int>(it - ranks_.begin()), sig == SIGTTIN ? "SIGTTIN" : "SIGTTOU");
        haveFailure_ = true;
        exitStatus_ = 1;
        beginTermination();
        killLive(SIGCONT);  // a stopped rank acts on the SIGTERM only once continued
      }
      continue;
    }
    it->alive = false;
    --liveCount_;
    int rank = static_cast<int>(it - ranks_.begin());
    bool failed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
    // Once we are killing the job, later deaths are our doing, not news.
    if (!failed || terminating_) continue;
    if (WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      std::fprintf(stderr, "braidrun: rank %d killed by signal %d (%s)\n", rank, sig, strsignal(sig));
      exitStatus_ = 128 + sig;
    } else {
      std::fprintf(stderr, "braidrun: rank %d exited with status %d\n", rank, WEXITSTATUS(status));
      exitStatus_ = WEXITSTATUS(status);
    }
    haveFailure_ = true;
    if (liveCount_ > 0) std::fprintf(stderr, "braidrun: killing the other %d rank(s)\n", liveCount_);
    beginTermination();
  }
}

void Launcher::onSignal(int sig) {
  if (sig == SIGCHLD) return;  // reapChildren runs after every wake-up
  ++forwardedSignals_;
  if (forwardedSignals_ > 1) {
    // A second interrupt means the ranks did not stop on the first: stop them for good.
    std::fprintf(stderr, "braidrun: %s again; killing all ranks\n", strsignal(sig));
    killLive(SIGKILL);
    return;
  }
  killLive(sig);
}

void Launcher::beginTermination() {
  if (terminating_) return;
  terminating_ = true;
  killLive(SIGTERM);
  killAt_ = Clock::now() + kKillGrace;
}

void Launcher::killLive(int sig) {
  for (const Rank& r : ranks_) {
    if (r.alive) ::kill(-r.pid, sig);
  }
}

}  // namespace braid
