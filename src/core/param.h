// Typed accessors for the parameters of params.def. Values are read from the environment at each call
// (these are read at init, never on a hot path), so tests may change the environment between comms.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace braid {

// Reads an integer environment variable; a malformed value warns once and yields `def`.
int64_t readIntEnv(const char* name, int64_t def);
std::string readStrEnv(const char* name, const char* def);

// Accepted but not implemented variables (BRAID_IGNORED_PARAM) get no accessor: nothing may read them.
namespace params {
#define BRAID_INT_PARAM(Name, env, def, doc) \
  inline int64_t Name() { return ::braid::readIntEnv(env, def); }
#define BRAID_STR_PARAM(Name, env, def, doc) \
  inline std::string Name() { return ::braid::readStrEnv(env, def); }
#define BRAID_PARTIAL_PARAM(Name, env, def, honoured, doc) BRAID_STR_PARAM(Name, env, def, doc)
#define BRAID_IGNORED_PARAM(Name, env, quiet, doc)
#include "params.def"
#undef BRAID_INT_PARAM
#undef BRAID_STR_PARAM
#undef BRAID_PARTIAL_PARAM
#undef BRAID_IGNORED_PARAM
}  // namespace params

// Logs one warning per process for each variable of params.def that is set (non-empty) to a value Braid does
// not implement (BRAID_IGNORED_PARAM, BRAID_PARTIAL_PARAM), naming it and saying what Braid does instead. Every
// communicator init calls it; only the first call in the process looks. Thread-safe.
void warnUnimplementedParams();
// The check itself, without the once-per-process guard: logs and returns how many variables it warned of.
int warnUnimplementedParamsNow();

// Tests only (the BRAID_TEST_*_KILL_* parameters): the process SIGKILLs itself, running no cleanup, as the
// n-th call counted by `calls` happens (n <= 0: never). Lets a test kill a rank at an exact point of setup.
void testKillOnCall(std::atomic<int64_t>& calls, int64_t n);

// NCCL_BUFFSIZE as every user of it takes it: outside [64 KiB, 2 GiB] the default 4 MiB (the FIFOs and the
// tuner must agree: a tuner that assumed 4 MiB over FIFOs of the raw 32 KiB planned steps the FIFO lacked).
// `warn`: say so (once per call; comm init asks, the tuner does not repeat it).
constexpr int64_t kBuffSizeMin = int64_t{64} << 10;
constexpr int64_t kBuffSizeMax = int64_t{1} << 31;
int64_t buffSizeBytes(bool warn);
// Whether NCCL_BUFFSIZE is set (non-empty): only then does its value, or its 4 MiB fallback, hold as given.
bool buffSizeSet();

// Two optional upper bounds (<= 0: unset) as one: the smaller where both are set, either alone where only one
// is, -1 where neither is. NCCL applies every bound it is given (NCCL_MAX_NCHANNELS, NCCL_MAX_CTAS,
// config.maxCTAs), so each place that folds them uses this.
inline int64_t foldBounds(int64_t a, int64_t b) {
  if (a > 0 && b > 0) return a < b ? a : b;
  return a > 0 ? a : (b > 0 ? b : -1);
}
// The channel bound the environment sets (NCCL_MAX_NCHANNELS and NCCL_MAX_CTAS folded). The channel agreement
// and the tuner both take it.
inline int64_t envMaxChannels() { return foldBounds(params::MaxNChannels(), params::MaxCtas()); }

// One row per parameter, for `braid_info`-style listings and tests.
enum class ParamKind { Int, Str, Partial, Ignored };
struct ParamDesc {
  const char* name;
  const char* env;
  const char* def;       // "" for Ignored
  const char* doc;
  ParamKind kind;
  const char* accepted;  // Partial: the values implemented; Ignored: values that draw no warning
};
// Whether `value` would draw the warning of warnUnimplementedParams for `p` (empty: unset, never).
bool paramValueUnimplemented(const ParamDesc& p, const char* value);
const ParamDesc* paramTable(int* count);

}  // namespace braid
