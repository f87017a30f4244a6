// Multi-process test harness: fork, id hand-out, failure forwarding, deadline. See harness.h.
#include "mp/common/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

namespace mp {
namespace {

constexpr size_t kStatusBytes = 256;

int g_msgFd = -1;              // child: write end of its message pipe
char* g_statusSlot = nullptr;  // child: its slot in the shared status region

bool writeAll(int fd, const void* data, size_t n) {
  const char* p = (const char*)data;
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

// Reads exactly n bytes; false on EOF/error.
bool readAll(int fd, void* data, size_t n) {
  char* p = (char*)data;
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

void sendLine(const std::string& s) {
  if (g_msgFd < 0) {
    std::cerr << s;
    return;
  }
  writeAll(g_msgFd, s.data(), s.size());
}

class Forwarder : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.type() == ::testing::TestPartResult::kSuccess) return;
    std::ostringstream os;
    if (r.type() == ::testing::TestPartResult::kSkip) {
      os << "note: skipped: " << r.message() << "\n";
    } else {
      os << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number() << ": "
         << (r.fatally_failed() ? "[fatal] " : "") << r.message() << "\n";
    }
    sendLine(os.str());
  }
};

[[noreturn]] void childMain(int rank, int nranks, const Options& opts, int idFd, int idUpFd,
                            const std::function<void(RankCtx&)>& body) {
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new Forwarder);

  for (auto& kv : opts.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  RankCtx ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  auto finish = [&]() {
    fflush(stdout);
    fflush(stderr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  };
  try {
    if (opts.childSetup) {
      setStatus("childSetup");
      opts.childSetup(rank);
      if (::testing::Test::HasFatalFailure()) finish();
    }
    if (opts.idSource == IdSource::kRank0 && rank == 0) {
      setStatus("ncclGetUniqueId in rank 0");
      ncclResult_t res = ncclGetUniqueId(&ctx.id);
      if (res != ncclSuccess) {
        ADD_FAILURE() << "ncclGetUniqueId in rank 0 -> " << ncclGetErrorString(res) << ": "
                      << ncclGetLastError(nullptr);
        finish();
      }
      if (!writeAll(idUpFd, &ctx.id, sizeof ctx.id)) {
        ADD_FAILURE() << "harness: cannot send the id to the parent";
        finish();
      }
      close(idUpFd);
    } else if (opts.idSource != IdSource::kNone) {
      setStatus("waiting for the unique id");
      if (!readAll(idFd, &ctx.id, sizeof ctx.id)) {
        sendLine("harness: no unique id arrived (the parent or rank 0 failed to make one)\n");
        fflush(stdout);
        _exit(3);
      }
    }
    setStatus("body");
    body(ctx);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "exception in rank " << rank << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << "unknown exception in rank " << rank;
  }
  finish();
  _exit(1);  // not reached
}

struct Child {
  pid_t pid = -1;
  int idFd = -1;   // parent writes the id here
  int msgFd = -1;  // parent reads messages here
  bool reaped = false;
  bool msgEof = false;
  bool stopped = false;
};

}  // namespace

double nowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void* sharedAlloc(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0, bytes);
  return p;
}

void setStatus(const char* fmt, ...) {
  if (!g_statusSlot) return;
  char buf[kStatusBytes];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::memcpy(g_statusSlot, buf, kStatusBytes);
}

void note(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sendLine(std::string("note: ") + buf + "\n");
}

ncclResult_t waitAsync(ncclComm_t comm, double seconds) {
  const double end = nowSec() + seconds;
  ncclResult_t st = ncclInProgress;
  while (nowSec() < end) {
    ncclResult_t r = ncclCommGetAsyncError(comm, &st);
    if (r != ncclSuccess) return r;
    if (st != ncclInProgress) return st;
    usleep(1000);
  }
  return ncclInProgress;
}

std::string lastError(ncclComm_t comm) {
  const char* s = ncclGetLastError(comm);
  return s ? std::string(s) : std::string("(null)");
}

bool containsCI(const std::string& hay, const std::string& needle) {
  auto lower = [](std::string s) {
    for (auto& c : s) c = (char)std::tolower((unsigned char)c);
    return s;
  };
  return lower(hay).find(lower(needle)) != std::string::npos;
}

bool mentionsRank(const std::string& msg, int r) {
  if (!containsCI(msg, "rank")) return false;
  std::string want = std::to_string(r);
  for (size_t i = 0; i < msg.size();) {
    if (std::isdigit((unsigned char)msg[i])) {
      size_t j = i;
      while (j < msg.size() && std::isdigit((unsigned char)msg[j])) j++;
      if (msg.compare(i, j - i, want) == 0 && j - i == want.size()) return true;
      i = j;
    } else {
      i++;
    }
  }
  return false;
}

void initComm(const RankCtx& ctx, ncclComm_t* comm) {
  *comm = nullptr;
  setStatus("ncclCommInitRank");
  ncclResult_t res = ncclCommInitRank(comm, ctx.nranks, ctx.id, ctx.rank);
  ASSERT_EQ(res, ncclSuccess) << "ncclCommInitRank(nranks=" << ctx.nranks << ", rank=" << ctx.rank << ") -> "
                              << ncclGetErrorString(res) << ": " << ncclGetLastError(nullptr);
  ASSERT_NE(*comm, nullptr) << "ncclCommInitRank succeeded but returned a NULL comm";
}

bool RunResult::allPassed() const {
  if (!harnessError.empty()) return false;
  for (auto& r : ranks)
    if (!r.exited || r.exitCode != 0 || r.timedOut) return false;
  return true;
}

std::string RunResult::describe() const {
  std::ostringstream os;
  if (!harnessError.empty()) os << "harness: " << harnessError << "\n";
  std::vector<int> stuck;
  for (auto& r : ranks)
    if (r.timedOut) stuck.push_back(r.rank);
  if (!stuck.empty()) {
    os << "TIMED OUT: ranks";
    for (int s : stuck) os << " " << s;
    os << " were still running at the deadline and were killed\n";
  }
  for (auto& r : ranks) {
    os << "rank " << r.rank << ": ";
    if (r.timedOut)
      os << "TIMED OUT (killed)";
    else if (r.exited)
      os << "exit " << r.exitCode;
    else if (r.termSignal && r.stopped)
      os << "stopped, then killed by signal " << r.termSignal;
    else if (r.termSignal)
      os << "killed by signal " << r.termSignal << " (" << strsignal(r.termSignal) << ")";
    else
      os << "unknown end";
    if (!r.status.empty()) os << "; last status: " << r.status;
    os << "\n";
    std::istringstream ms(r.messages);
    std::string line;
    while (std::getline(ms, line)) os << "    [rank " << r.rank << "] " << line << "\n";
  }
  os << "(" << seconds << " s)\n";
  return os.str();
}

void expectAllPassed(const RunResult& r) {
  if (!r.allPassed()) {
    ADD_FAILURE() << r.describe();
  } else if (getenv("MP_VERBOSE")) {
    std::cout << r.describe();
  }
}

RunResult runRanks(int nranks, const Options& opts, const std::function<void(RankCtx&)>& body) {
  RunResult result;
  result.ranks.resize(nranks);
  for (int i = 0; i < nranks; i++) result.ranks[i].rank = i;
  signal(SIGPIPE, SIG_IGN);
  if (opts.idSource != IdSource::kNone) unsetenv("NCCL_COMM_ID");

  char* status = (char*)sharedAlloc(kStatusBytes * (size_t)nranks);
  std::vector<Child> kids(nranks);
  std::vector<int> childEnds;  // fds each child must close except its own
  std::vector<std::pair<int, int>> idPipes(nranks), msgPipes(nranks);
  int idUp[2] = {-1, -1};
  auto mkpipe = [&](int p[2]) {
    if (pipe2(p, O_CLOEXEC) != 0) {
      result.harnessError = std::string("pipe: ") + strerror(errno);
      return false;
    }
    return true;
  };
  for (int i = 0; i < nranks; i++) {
    int a[2], b[2];
    if (!mkpipe(a) || !mkpipe(b)) return result;
    idPipes[i] = {a[0], a[1]};
    msgPipes[i] = {b[0], b[1]};
  }
  if (opts.idSource == IdSource::kRank0 && !mkpipe(idUp)) return result;

  double t0 = nowSec();
  pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < nranks; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      result.harnessError = std::string("fork: ") + strerror(errno);
      for (int j = 0; j < i; j++) kill(kids[j].pid, SIGKILL);
      for (int j = 0; j < i; j++) waitpid(kids[j].pid, nullptr, 0);
      return result;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(4);
      for (int j = 0; j < nranks; j++) {
        close(idPipes[j].second);
        close(msgPipes[j].first);
        if (j != i) {
          close(idPipes[j].first);
          close(msgPipes[j].second);
        }
      }
      if (idUp[0] >= 0) close(idUp[0]);
      if (i != 0 && idUp[1] >= 0) close(idUp[1]);
      g_msgFd = msgPipes[i].second;
      g_statusSlot = status ? status + kStatusBytes * i : nullptr;
      childMain(i, nranks, opts, idPipes[i].first, i == 0 ? idUp[1] : -1, body);
    }
    kids[i].pid = pid;
    kids[i].idFd = idPipes[i].second;
    kids[i].msgFd = msgPipes[i].first;
  }
  for (int i = 0; i < nranks; i++) {
    close(idPipes[i].first);
    close(msgPipes[i].second);
  }
  if (idUp[1] >= 0) close(idUp[1]);

  auto distribute = [&](const ncclUniqueId& id, int from) {
    for (int i = from; i < nranks; i++) {
      writeAll(kids[i].idFd, &id, sizeof id);  // a rank that already died is fine (EPIPE, ignored)
    }
    for (int i = 0; i < nranks; i++) {
      close(kids[i].idFd);
      kids[i].idFd = -1;
    }
    if (opts.parentHook) opts.parentHook(id);
  };

  if (opts.idSource == IdSource::kParent) {
    ncclUniqueId id;
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) {
      result.harnessError = std::string("ncclGetUniqueId in the parent -> ") + ncclGetErrorString(res) + ": " +
                            (ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : "");
      for (auto& k : kids) {
        close(k.idFd);  // children see EOF and exit 3
        k.idFd = -1;
      }
    } else {
      distribute(id, 0);
    }
  } else if (opts.idSource == IdSource::kNone) {
    for (auto& k : kids) {
      close(k.idFd);
      k.idFd = -1;
    }
  }

  // Main loop: read messages, relay the id from rank 0, reap children, until all are done or the deadline.
  ncclUniqueId upId;
  size_t upGot = 0;
  int upFd = idUp[0];
  double deadline = t0 + opts.timeoutSec;
  auto allDone = [&]() {
    for (auto& k : kids)
      if (!k.reaped || !k.msgEof) return false;
    return true;
  };
  while (!allDone()) {
    double now = nowSec();
    if (now >= deadline) break;
    std::vector<pollfd> pfds;
    std::vector<int> who;  // -1 = upFd
    for (int i = 0; i < nranks; i++) {
      if (!kids[i].msgEof) {
        pfds.push_back({kids[i].msgFd, POLLIN, 0});
        who.push_back(i);
      }
    }
    if (upFd >= 0) {
      pfds.push_back({upFd, POLLIN, 0});
      who.push_back(-1);
    }
    int ms = (int)std::min(50.0, (deadline - now) * 1000) + 1;
    int pr = poll(pfds.data(), pfds.size(), ms);
    if (pr > 0) {
      for (size_t p = 0; p < pfds.size(); p++) {
        if (!(pfds[p].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (who[p] < 0) {
          ssize_t r = read(upFd, (char*)&upId + upGot, sizeof upId - upGot);
          if (r > 0) upGot += (size_t)r;
          if (r <= 0 || upGot == sizeof upId) {
            close(upFd);
            upFd = -1;
            if (upGot == sizeof upId) {
              distribute(upId, 1);
            } else {
              for (auto& k : kids) {
                if (k.idFd >= 0) close(k.idFd);
                k.idFd = -1;
              }
            }
          }
          continue;
        }
        Child& k = kids[who[p]];
        char buf[4096];
        ssize_t r = read(k.msgFd, buf, sizeof buf);
        if (r > 0)
          result.ranks[who[p]].messages.append(buf, (size_t)r);
        else if (r == 0 || (errno != EINTR && errno != EAGAIN))
          k.msgEof = true;
      }
    }
    for (int i = 0; i < nranks; i++) {
      if (kids[i].reaped) continue;
      int st = 0;
      pid_t w = waitpid(kids[i].pid, &st, WNOHANG | WUNTRACED);
      if (w == kids[i].pid && WIFSTOPPED(st)) {
        kids[i].stopped = true;
        result.ranks[i].stopped = true;
      } else if (w == kids[i].pid) {
        kids[i].reaped = true;
        auto& rr = result.ranks[i];
        rr.exited = WIFEXITED(st);
        rr.exitCode = rr.exited ? WEXITSTATUS(st) : -1;
        rr.termSignal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
      }
    }
    if (opts.killStopped) {
      bool othersDone = true;
      for (auto& k : kids)
        if (!k.reaped && !k.stopped) othersDone = false;
      for (auto& k : kids)
        if (othersDone && k.stopped && !k.reaped) kill(k.pid, SIGKILL);  // reaped on the next round
    }
  }
  // Deadline: kill what is left.
  for (int i = 0; i < nranks; i++) {
    if (kids[i].reaped) continue;
    kill(kids[i].pid, SIGKILL);
    int st = 0;
    waitpid(kids[i].pid, &st, 0);
    kids[i].reaped = true;
    result.ranks[i].timedOut = true;
    result.ranks[i].termSignal = SIGKILL;
  }
  for (int i = 0; i < nranks; i++) {
    if (!kids[i].msgEof) {  // drain what is buffered
      int fl = fcntl(kids[i].msgFd, F_GETFL);
      fcntl(kids[i].msgFd, F_SETFL, fl | O_NONBLOCK);
      char buf[4096];
      ssize_t r;
      while ((r = read(kids[i].msgFd, buf, sizeof buf)) > 0) result.ranks[i].messages.append(buf, (size_t)r);
    }
    close(kids[i].msgFd);
    if (kids[i].idFd >= 0) close(kids[i].idFd);
    if (status) {
      status[kStatusBytes * i + kStatusBytes - 1] = 0;
      result.ranks[i].status = status + kStatusBytes * i;
    }
  }
  if (upFd >= 0) close(upFd);
  if (status) munmap(status, kStatusBytes * (size_t)nranks);
  result.seconds = nowSec() - t0;
  return result;
}

LogDir::LogDir() {
  char tmpl[] = "/tmp/braid_mp_logs_XXXXXX";
  if (mkdtemp(tmpl)) dir_ = tmpl;
}

LogDir::~LogDir() {
  if (dir_.empty()) return;
  if (DIR* d = opendir(dir_.c_str())) {
    while (const dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        std::remove((dir_ + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  rmdir(dir_.c_str());
}

std::string LogDir::read(int rank) const {
  std::ifstream in(path(rank));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int LogDir::count(int nranks, const std::string& what) const {
  int n = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    const std::string log = read(rank);
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
  }
  return n;
}

}  // namespace mp
