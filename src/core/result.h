// Errors as values: check macros and the "first failure records a message" mechanism (docs/DESIGN.md §2).
// Every internal function that can fail returns ncclResult_t. The innermost failure records a precise
// message with recordError(); callers propagate the code with BRAID_CHECK without overwriting it. The API
// layer opens an ErrorScope per call and copies the message to the communicator for ncclGetLastError.
#pragma once

#include <string>

#include "nccl.h"

namespace braid {

// Records `msg` as this thread's pending error unless one is already pending in the current scope
// (the first failure is the precise one). Returns `code` so callers can write `return recordError(...)`.
ncclResult_t recordError(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The pending message of this thread ("" if none).
const std::string& pendingError();
void clearPendingError();
// Thread-wide last error (what ncclGetLastError(NULL) returns); survives scopes.
const std::string& threadLastError();
void setThreadLastError(const std::string& msg);

// Opened at each C API entry: clears the pending message; on close the API layer decides where it goes.
class ErrorScope {
 public:
  ErrorScope();
  ~ErrorScope();
  ErrorScope(const ErrorScope&) = delete;
  ErrorScope& operator=(const ErrorScope&) = delete;

 private:
  std::string saved_;
};

const char* errorString(ncclResult_t r);

}  // namespace braid

#define BRAID_CHECK(call)                                 \
  do {                                                    \
    ncclResult_t braid_res_ = (call);                     \
    if (braid_res_ != ncclSuccess) return braid_res_;     \
  } while (0)

// For system calls returning -1 + errno.
#define BRAID_SYS_CHECK(call, what)                                                                        \
  do {                                                                                                     \
    if ((call) == -1) {                                                                                    \
      int braid_errno_ = errno;                                                                            \
      return ::braid::recordError(ncclSystemError, "%s failed: %s (errno %d) at %s:%d", what,              \
                                  strerror(braid_errno_), braid_errno_, __FILE__, __LINE__);               \
    }                                                                                                      \
  } while (0)

#define BRAID_ERR(code, ...) ::braid::recordError(code, __VA_ARGS__)
