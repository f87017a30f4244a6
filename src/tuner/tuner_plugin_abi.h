// The NCCL tuner plugin ABI that Braid loads (tuner_plugin.cc): the ncclTuner_v2 ... v6 tables a libnccl-tuner*.so
// (or a network plugin's library) exports as ncclTunerPlugin_vN, and the types they take, laid out as NCCL's plugin
// headers define them. Nothing but layouts lives here; tests/tuner_plugin builds a plugin against the same ones.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid {
namespace tunerabi {

// ncclFunc_t values of the collectives a tuner is asked about.
constexpr int kFuncBroadcast = 0;
constexpr int kFuncReduce = 1;
constexpr int kFuncAllGather = 2;
constexpr int kFuncReduceScatter = 3;
constexpr int kFuncAllReduce = 4;
// The cost table's rows and columns: NCCL_ALGO_* (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT) and
// NCCL_PROTO_* (LL, LL128, Simple); an entry of -1 (NCCL_ALGO_PROTO_IGNORE) is not offered.
constexpr int kNumAlgos = 7;
constexpr int kNumProtos = 3;
constexpr int kAlgoTree = 0;
constexpr int kAlgoRing = 1;
constexpr float kIgnore = -1.0f;

extern "C" {

typedef void (*DebugLogger)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct TunerV2 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, DebugLogger log, void** context);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                              int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

struct TunerV3 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, DebugLogger log, void** context);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

struct TunerV4 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, DebugLogger log, void** context);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

// v5 and v6: what init is told of NVLink domains, and NCCL's model constants, which the plugin may adjust (Braid
// hands zeros and does not read them back: its own model prices the table).
struct NvlDomainInfoV5 {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};
struct ConstantsV5 {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
};

struct TunerV5 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, DebugLogger log,
                       NvlDomainInfoV5* nvlDomainInfo, ConstantsV5* constants);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
};

// v6 adds a chunk-size override, which Braid never calls (its FIFO steps are fixed at connection time).
struct TunerV6 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, DebugLogger log,
                       NvlDomainInfoV5* nvlDomainInfo, ConstantsV5* constants);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
  ncclResult_t (*getChunkSize)(void* context, int collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
};

}  // extern "C"

}  // namespace tunerabi
}  // namespace braid
