// Environment parameter reading and the table of every parameter (from params.def).
#include "core/param.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "core/log.h"

namespace braid {

int64_t readIntEnv(const char* name, int64_t def) {
  const char* s = getenv(name);
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (errno != 0 || end == s || (end && *end != '\0')) {
    static std::mutex mu;
    static std::set<std::string> warned;
    std::lock_guard<std::mutex> lock(mu);
    if (warned.insert(name).second)
      BRAID_WARN("invalid value '%s' for %s (expected an integer); using default %lld", s, name,
                 static_cast<long long>(def));
    return def;
  }
  return v;
}

int64_t buffSizeBytes(bool warn) {
  const int64_t b = params::BuffSize();
  if (b >= kBuffSizeMin && b <= kBuffSizeMax) return b;
  if (warn)
    BRAID_WARN("NCCL_BUFFSIZE=%lld is outside [64 KiB, 2 GiB]; using %d", static_cast<long long>(b), 4 << 20);
  return 4 << 20;
}

bool buffSizeSet() {
  const char* s = getenv("NCCL_BUFFSIZE");
  return s != nullptr && *s != '\0';
}

std::string readStrEnv(const char* name, const char* def) {
  const char* s = getenv(name);
  return s ? std::string(s) : std::string(def);
}

namespace {
#define BRAID_STRINGIFY2(x) #x
#define BRAID_STRINGIFY(x) BRAID_STRINGIFY2(x)
const ParamDesc kParams[] = {
#define BRAID_INT_PARAM(Name, env, def, doc) {#Name, env, BRAID_STRINGIFY(def), doc},
#define BRAID_STR_PARAM(Name, env, def, doc) {#Name, env, def, doc},
#include "core/params.def"
#undef BRAID_INT_PARAM
#undef BRAID_STR_PARAM
};
}  // namespace

const ParamDesc* paramTable(int* count) {
  *count = static_cast<int>(sizeof(kParams) / sizeof(kParams[0]));
  return kParams;
}

}  // namespace braid
