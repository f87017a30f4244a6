// Logging per NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE. Each line carries host, pid, thread id
// and the rank of the communicator the thread is working for (set with RankTag).
#pragma once

#include <cstdint>

namespace braid {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Abort = 4, Trace = 5 };

enum LogSubsys : uint64_t {
  kSubInit = 1ull << 0,
  kSubColl = 1ull << 1,
  kSubP2p = 1ull << 2,
  kSubShm = 1ull << 3,
  kSubNet = 1ull << 4,
  kSubGraph = 1ull << 5,
  kSubTuning = 1ull << 6,
  kSubEnv = 1ull << 7,
  kSubAlloc = 1ull << 8,
  kSubCall = 1ull << 9,
  kSubProxy = 1ull << 10,
  kSubNvls = 1ull << 11,
  kSubBootstrap = 1ull << 12,
  kSubReg = 1ull << 13,
  kSubProfile = 1ull << 14,
  kSubRas = 1ull << 15,
  kSubAll = ~0ull,
};

// Parses NCCL_DEBUG and friends on first use; resetLogging() makes the next log call re-read them.
void resetLogging();
bool logEnabled(LogLevel level, uint64_t subsys);
void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Parsers, exposed for tests. Unknown names are ignored (as NCCL does) but reported once via warn.
LogLevel parseLogLevel(const char* s);
uint64_t parseSubsysMask(const char* s);

// The rank shown in log lines of this thread while a RankTag lives (-1: none).
int currentLogRank();
class RankTag {
 public:
  explicit RankTag(int rank);
  ~RankTag();
  RankTag(const RankTag&) = delete;
  RankTag& operator=(const RankTag&) = delete;

 private:
  int prev_;
};

}  // namespace braid

#define BRAID_WARN(...)                                                                        \
  do {                                                                                         \
    if (::braid::logEnabled(::braid::LogLevel::Warn, ::braid::kSubAll))                        \
      ::braid::logMessage(::braid::LogLevel::Warn, ::braid::kSubAll, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define BRAID_INFO(sub, ...)                                                                   \
  do {                                                                                         \
    if (::braid::logEnabled(::braid::LogLevel::Info, (sub)))                                   \
      ::braid::logMessage(::braid::LogLevel::Info, (sub), __FILE__, __LINE__, __VA_ARGS__);    \
  } while (0)
#define BRAID_TRACE(sub, ...)                                                                  \
  do {                                                                                         \
    if (::braid::logEnabled(::braid::LogLevel::Trace, (sub)))                                  \
      ::braid::logMessage(::braid::LogLevel::Trace, (sub), __FILE__, __LINE__, __VA_ARGS__);   \
  } while (0)
