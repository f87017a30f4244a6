// Error recording: the thread's pending message (first failure wins inside an ErrorScope) and the
// thread-wide last error, plus ncclGetErrorString's texts.
#include "core/result.h"

#include <cstdarg>
#include <cstdio>

#include "core/log.h"

namespace braid {
namespace {
thread_local std::string tPending;
thread_local std::string tLast;
}  // namespace

ncclResult_t recordError(ncclResult_t code, const char* fmt, ...) {
  if (!tPending.empty()) return code;
  char buf[2048];  // a timeout names every peer's last operation (wait.h StallReporter)
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  tPending = buf;
  tLast = buf;
  BRAID_INFO(kSubAll, "error recorded (%s): %s", errorString(code), buf);
  return code;
}

const std::string& pendingError() { return tPending; }
void clearPendingError() { tPending.clear(); }
const std::string& threadLastError() { return tLast; }
void setThreadLastError(const std::string& msg) { tLast = msg; }

ErrorScope::ErrorScope() : saved_(std::move(tPending)) { tPending.clear(); }
ErrorScope::~ErrorScope() { tPending = std::move(saved_); }

const char* errorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Braid developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

}  // namespace braid
