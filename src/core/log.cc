// Logging: NCCL_DEBUG level, NCCL_DEBUG_SUBSYS mask, NCCL_DEBUG_FILE destination. Lines read
// "host:pid:tid [rank R] BRAID WARN message" so logs of many ranks can be merged and grepped; VERSION lines
// are bare, as NCCL's are.
#include "core/log.h"

#include <pthread.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace braid {
namespace {

struct LogState {
  std::mutex mu;
  std::atomic<bool> initialised{false};
  std::atomic<int> level{static_cast<int>(LogLevel::Warn)};
  std::atomic<uint64_t> mask{kSubAll};
  FILE* out = stderr;
  std::string outName;  // NCCL_DEBUG_FILE as opened (expanded); empty for stderr
  char host[64] = {};
};

LogState& state();

// A forked child reads the environment again at its next log line: it may have set its own NCCL_DEBUG_FILE, and a
// `%p` in it names the child's own file, not the parent's. A file of the same name stays open as inherited (never
// reopened, which would truncate what the parent wrote). The mutex is held across fork, so the child never
// inherits it locked by a thread that does not exist there.
void forkPrepare() { state().mu.lock(); }
void forkParent() { state().mu.unlock(); }
void forkChild() {
  LogState& s = state();
  s.initialised.store(false, std::memory_order_release);
  s.mu.unlock();
}

LogState& state() {
  static LogState* s = [] {
    auto* st = new LogState();  // never destroyed: logging may happen during exit
    pthread_atfork(forkPrepare, forkParent, forkChild);
    return st;
  }();
  return *s;
}

thread_local int tRank = -1;

struct SubsysName {
  const char* name;
  uint64_t bit;
};
const SubsysName kSubsys[] = {
    {"INIT", kSubInit},   {"COLL", kSubColl},     {"P2P", kSubP2p},   {"SHM", kSubShm},
    {"NET", kSubNet},     {"GRAPH", kSubGraph},   {"TUNING", kSubTuning}, {"ENV", kSubEnv},
    {"ALLOC", kSubAlloc}, {"CALL", kSubCall},     {"PROXY", kSubProxy}, {"NVLS", kSubNvls},
    {"BOOTSTRAP", kSubBootstrap}, {"REG", kSubReg}, {"PROFILE", kSubProfile}, {"RAS", kSubRas},
    {"ALL", kSubAll},
};

std::string expandFileName(const char* pattern, const char* host) {
  std::string out;
  for (const char* p = pattern; *p; ++p) {
    if (p[0] == '%' && p[1] == 'h') {
      out += host;
      ++p;
    } else if (p[0] == '%' && p[1] == 'p') {
      out += std::to_string(getpid());
      ++p;
    } else if (p[0] == '%' && p[1] == '%') {
      out += '%';
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

void initLocked(LogState& s) {
  if (s.initialised.load(std::memory_order_acquire)) return;
  gethostname(s.host, sizeof(s.host) - 1);
  if (char* dot = strchr(s.host, '.')) *dot = '\0';
  const char* lvl = getenv("NCCL_DEBUG");
  s.level.store(static_cast<int>(lvl ? parseLogLevel(lvl) : LogLevel::None));
  const char* sub = getenv("NCCL_DEBUG_SUBSYS");
  s.mask.store(sub ? parseSubsysMask(sub) : (kSubInit | kSubBootstrap | kSubEnv));
  const char* file = getenv("NCCL_DEBUG_FILE");
  std::string name;
  if (file && *file && s.level.load() > static_cast<int>(LogLevel::None)) name = expandFileName(file, s.host);
  const bool isFile = s.out != stderr && s.out != stdout && s.out != nullptr;
  if (isFile && !name.empty() && name == s.outName) {  // the same file (a forked child's, inherited): keep it
    s.initialised.store(true, std::memory_order_release);
    return;
  }
  if (isFile) fclose(s.out);
  s.out = stderr;
  s.outName.clear();
  if (!name.empty()) {
    if (FILE* f = fopen(name.c_str(), "w")) {
      setvbuf(f, nullptr, _IOLBF, 0);
      s.out = f;
      s.outName = name;
    } else {
      fprintf(stderr, "%s:%d BRAID WARN cannot open NCCL_DEBUG_FILE %s: %s\n", s.host, getpid(),
              name.c_str(), strerror(errno));
    }
  }
  s.initialised.store(true, std::memory_order_release);
}

}  // namespace

LogLevel parseLogLevel(const char* s) {
  if (strcasecmp(s, "VERSION") == 0) return LogLevel::Version;
  if (strcasecmp(s, "WARN") == 0) return LogLevel::Warn;
  if (strcasecmp(s, "INFO") == 0) return LogLevel::Info;
  if (strcasecmp(s, "ABORT") == 0) return LogLevel::Abort;
  if (strcasecmp(s, "TRACE") == 0) return LogLevel::Trace;
  return LogLevel::None;
}

uint64_t parseSubsysMask(const char* s) {
  bool invert = false;
  if (*s == '^') {
    invert = true;
    ++s;
  }
  uint64_t mask = 0;
  std::string all(s);
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    if (comma == std::string::npos) comma = all.size();
    std::string tok = all.substr(pos, comma - pos);
    for (const auto& e : kSubsys)
      if (strcasecmp(tok.c_str(), e.name) == 0) mask |= e.bit;
    pos = comma + 1;
  }
  return invert ? ~mask : mask;
}

void resetLogging() {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.initialised.store(false, std::memory_order_release);
  initLocked(s);
}

bool logEnabled(LogLevel level, uint64_t subsys) {
  LogState& s = state();
  if (!s.initialised.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(s.mu);
    initLocked(s);
  }
  if (static_cast<int>(level) > s.level.load(std::memory_order_relaxed)) return false;
  if (level == LogLevel::Warn || level == LogLevel::Version) return true;
  return (s.mask.load(std::memory_order_relaxed) & subsys) != 0;
}

void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  LogState& s = state();
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char* lvl = level == LogLevel::Warn ? "WARN" : level == LogLevel::Trace ? "TRACE" : "INFO";
  char rank[24] = "";
  if (tRank >= 0) snprintf(rank, sizeof(rank), " [rank %d]", tRank);
  long tid = syscall(SYS_gettid);
  // The whole line goes out in one write: ranks of a job often share one stderr (a pipe), and glibc's fprintf
  // to the unbuffered stderr may write a long line in 128-byte pieces, which interleave with other processes'
  // lines mid-line (seen on the GPU machine's glibc). A pipe write of at most PIPE_BUF bytes is atomic.
  // A message of several lines (split at '\n') goes out as that many log lines, each with the prefix, in the same
  // single write: lines that belong together (the version banner) stay together.
  char out[sizeof(msg) + 2048];
  size_t len = 0;
  std::lock_guard<std::mutex> lock(s.mu);  // s.out and s.host may be reset (resetLogging)
  for (char* part = msg; part != nullptr && len + 1 < sizeof(out);) {
    char* nl = strchr(part, '\n');
    if (nl) *nl = '\0';
    const size_t room = sizeof(out) - len;
    int n;
    if (level == LogLevel::Version) {
      n = snprintf(out + len, room, "%s\n", part);  // bare, as NCCL prints its version line
    } else if (level == LogLevel::Trace) {
      const char* base = strrchr(file, '/');
      n = snprintf(out + len, room, "%s:%d:%ld%s BRAID %s %s:%d %s\n", s.host, getpid(), tid, rank, lvl,
                   base ? base + 1 : file, line, part);
    } else {
      n = snprintf(out + len, room, "%s:%d:%ld%s BRAID %s %s\n", s.host, getpid(), tid, rank, lvl, part);
    }
    if (n < 0) return;
    len += std::min(static_cast<size_t>(n), room - 1);
    part = nl ? nl + 1 : nullptr;
  }
  if (len == 0) return;
  out[len - 1] = '\n';  // a truncated line still ends its line
  // Straight to the descriptor, under the stream's lock and after its buffer: an application that made stderr
  // buffered, or writes to it from another thread, keeps its output whole and in order around our line.
  flockfile(s.out);
  fflush(s.out);
  const int fd = fileno(s.out);
  for (const char* p = out; len > 0;) {
    const ssize_t w = ::write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // a closed or full destination loses the line, never the caller
    p += w;
    len -= static_cast<size_t>(w);
  }
  funlockfile(s.out);
}

int currentLogRank() { return tRank; }
RankTag::RankTag(int rank) : prev_(tRank) { tRank = rank; }
RankTag::~RankTag() { tRank = prev_; }

}  // namespace braid
