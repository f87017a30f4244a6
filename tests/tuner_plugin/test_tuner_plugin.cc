// A tuner plugin for the tests (libnccl-tuner-braidtest-vN.so, N = BRAID_TEST_TUNER_VERSION: 2 to 6), exporting
// ncclTunerPlugin_vN as NCCL's plugin headers lay it out (src/tuner/tuner_plugin_abi.h). It reads its environment at
// each call, so a test can change its mind between collectives:
//   BRAID_TEST_TUNER_PICK     ALGO,PROTO (tree, ring, nvls; ll, ll128, simple): that entry's cost goes to 0 and every
//                             other entry the caller offered to 1e9 (v2: the pick is returned as such)
//   BRAID_TEST_TUNER_CHANNELS a channel count to return
//   BRAID_TEST_TUNER_FAIL     init: init fails; call: getCollInfo fails
//   BRAID_TEST_TUNER_RECORD   a file each init, call and finalize appends a line to: "init N nRanks nNodes",
//                             "call FUNC BYTES PIPEOPS A:P=COST ..." (the entries offered, as received), "fini"
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tuner/tuner_plugin_abi.h"

using namespace braid::tunerabi;

namespace {

const char* env(const char* n) {
  const char* v = std::getenv(n);
  return v && *v ? v : nullptr;
}

void record(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void record(const char* fmt, ...) {
  const char* path = env("BRAID_TEST_TUNER_RECORD");
  if (!path) return;
  FILE* f = std::fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(f, fmt, ap);
  va_end(ap);
  std::fputc('\n', f);
  std::fclose(f);
}

// BRAID_TEST_TUNER_PICK as (algorithm, protocol) indices; false where unset or unknown.
bool pick(int* a, int* p) {
  const char* v = env("BRAID_TEST_TUNER_PICK");
  if (!v) return false;
  char algo[16] = {}, proto[16] = {};
  if (std::sscanf(v, "%15[^,],%15s", algo, proto) != 2) return false;
  *a = !std::strcmp(algo, "tree")   ? kAlgoTree
       : !std::strcmp(algo, "ring") ? kAlgoRing
       : !std::strcmp(algo, "nvls") ? 4  // NCCL_ALGO_NVLS: never offered by Braid
                                    : -1;
  *p = !std::strcmp(proto, "ll") ? 0 : !std::strcmp(proto, "ll128") ? 1 : !std::strcmp(proto, "simple") ? 2 : -1;
  return *a >= 0 && *p >= 0;
}

bool failing(const char* what) {
  const char* v = env("BRAID_TEST_TUNER_FAIL");
  return v && !std::strcmp(v, what);
}

int context = 42;  // what init hands out; every call checks it comes back

ncclResult_t startUp(size_t nRanks, size_t nNodes, void** ctx) {
  record("init %d %zu %zu", BRAID_TEST_TUNER_VERSION, nRanks, nNodes);
  if (failing("init")) return ncclInternalError;
  *ctx = &context;
  return ncclSuccess;
}

ncclResult_t tableCall(void* ctx, int func, size_t bytes, int pipeOps, float** table, int numAlgo, int numProto,
                       int* nChannels) {
  if (ctx != &context || numAlgo != kNumAlgos || numProto != kNumProtos) return ncclInvalidArgument;
  auto* cost = reinterpret_cast<float(*)[kNumProtos]>(table);  // NCCL's 2-D array, as plugins index it
  char line[512];
  int n = std::snprintf(line, sizeof(line), "call %d %zu %d", func, bytes, pipeOps);
  for (int a = 0; a < numAlgo; ++a)
    for (int p = 0; p < numProto; ++p)
      if (cost[a][p] >= 0 && n < static_cast<int>(sizeof(line)))
        n += std::snprintf(line + n, sizeof(line) - n, " %d:%d=%g", a, p, cost[a][p]);
  record("%s", line);
  if (failing("call")) return ncclInternalError;
  int a = -1, p = -1;
  if (pick(&a, &p)) {
    for (int i = 0; i < numAlgo; ++i)
      for (int j = 0; j < numProto; ++j)
        if (cost[i][j] >= 0) cost[i][j] = 1e9f;
    cost[a][p] = 0;
  }
  if (const char* c = env("BRAID_TEST_TUNER_CHANNELS")) *nChannels = std::atoi(c);
  return ncclSuccess;
}

ncclResult_t shutDown(void* ctx) {
  record("fini");
  return ctx == &context ? ncclSuccess : ncclInvalidArgument;
}

}  // namespace

extern "C" {

#if BRAID_TEST_TUNER_VERSION == 2
__attribute__((visibility("default"))) TunerV2 ncclTunerPlugin_v2 = {
    "BraidTestTuner",
    [](size_t r, size_t n, DebugLogger, void** ctx) { return startUp(r, n, ctx); },
    [](void* ctx, int func, size_t bytes, int, int, int pipeOps, int* algo, int* proto, int* nChannels) {
      if (ctx != &context) return ncclInvalidArgument;
      record("call %d %zu %d", func, bytes, pipeOps);
      if (failing("call")) return ncclInternalError;
      pick(algo, proto);
      if (const char* c = env("BRAID_TEST_TUNER_CHANNELS")) *nChannels = std::atoi(c);
      return ncclSuccess;
    },
    shutDown};
#elif BRAID_TEST_TUNER_VERSION == 3
__attribute__((visibility("default"))) TunerV3 ncclTunerPlugin_v3 = {
    "BraidTestTuner",
    [](size_t r, size_t n, DebugLogger, void** ctx) { return startUp(r, n, ctx); },
    [](void* ctx, int func, size_t bytes, int pipeOps, float** t, int na, int np, int* nc) {
      return tableCall(ctx, func, bytes, pipeOps, t, na, np, nc);
    },
    shutDown};
#elif BRAID_TEST_TUNER_VERSION == 4
__attribute__((visibility("default"))) TunerV4 ncclTunerPlugin_v4 = {
    "BraidTestTuner",
    [](size_t r, size_t n, DebugLogger, void** ctx) { return startUp(r, n, ctx); },
    [](void* ctx, int func, size_t bytes, int pipeOps, float** t, int na, int np, int, int* nc) {
      return tableCall(ctx, func, bytes, pipeOps, t, na, np, nc);
    },
    shutDown};
#else
#define BRAID_TEST_TUNER_INIT                                                                               \
  [](void** ctx, uint64_t, size_t r, size_t n, DebugLogger, NvlDomainInfoV5* nvl, ConstantsV5* k) {         \
    if (!nvl || !k || nvl->nNvlDomains != static_cast<int>(n)) return ncclInvalidArgument;                  \
    k->baseLatencies[1][2] = 99.0; /* a plugin may write the constants: the caller must own them */         \
    return startUp(r, n, ctx);                                                                              \
  }
#define BRAID_TEST_TUNER_CALL                                                                               \
  [](void* ctx, int func, size_t bytes, int pipeOps, float** t, int na, int np, int, int* nc) {              \
    return tableCall(ctx, func, bytes, pipeOps, t, na, np, nc);                                             \
  }
#if BRAID_TEST_TUNER_VERSION == 5
__attribute__((visibility("default"))) TunerV5 ncclTunerPlugin_v5 = {"BraidTestTuner", BRAID_TEST_TUNER_INIT,
                                                                      BRAID_TEST_TUNER_CALL, shutDown};
#else
__attribute__((visibility("default"))) TunerV6 ncclTunerPlugin_v6 = {
    "BraidTestTuner", BRAID_TEST_TUNER_INIT, BRAID_TEST_TUNER_CALL, shutDown,
    [](void*, int, size_t, int, int, int, size_t*) { return ncclInternalError; }};  // never to be called
#endif
#endif

}  // extern "C"
