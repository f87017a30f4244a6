// Environment parameter reading and the table of every parameter (from params.def).
#include "core/param.h"

#include <cerrno>
#include <csignal>
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
#define BRAID_INT_PARAM(Name, env, def, doc) {#Name, env, BRAID_STRINGIFY(def), doc, ParamKind::Int, ""},
#define BRAID_STR_PARAM(Name, env, def, doc) {#Name, env, def, doc, ParamKind::Str, ""},
#define BRAID_PARTIAL_PARAM(Name, env, def, honoured, doc) {#Name, env, def, doc, ParamKind::Partial, honoured},
#define BRAID_IGNORED_PARAM(Name, env, quiet, doc) {#Name, env, "", doc, ParamKind::Ignored, quiet},
#include "core/params.def"
#undef BRAID_INT_PARAM
#undef BRAID_STR_PARAM
#undef BRAID_PARTIAL_PARAM
#undef BRAID_IGNORED_PARAM
};

// Whether `value` is one of the comma-separated `list` (exact match).
bool inList(const char* list, const std::string& value) {
  const std::string all(list);
  size_t start = 0;
  while (start <= all.size()) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    if (all.compare(start, comma - start, value) == 0 && !value.empty()) return true;
    start = comma + 1;
  }
  return false;
}
}  // namespace

const ParamDesc* paramTable(int* count) {
  *count = static_cast<int>(sizeof(kParams) / sizeof(kParams[0]));
  return kParams;
}

bool paramValueUnimplemented(const ParamDesc& p, const char* value) {
  if (value == nullptr || *value == '\0') return false;
  if (p.kind != ParamKind::Partial && p.kind != ParamKind::Ignored) return false;
  return !inList(p.accepted, value);
}

int warnUnimplementedParamsNow() {
  int warned = 0;
  for (const ParamDesc& p : kParams) {
    const char* v = getenv(p.env);
    if (!paramValueUnimplemented(p, v)) continue;
    ++warned;
    BRAID_WARN("%s=%s has no effect in Braid (not implemented): %s", p.env, v, p.doc);
  }
  return warned;
}

void warnUnimplementedParams() {
  static std::once_flag once;
  std::call_once(once, [] { warnUnimplementedParamsNow(); });
}

void testKillOnCall(std::atomic<int64_t>& calls, int64_t n) {
  if (n > 0 && calls.fetch_add(1) + 1 == n) raise(SIGKILL);
}

}  // namespace braid
