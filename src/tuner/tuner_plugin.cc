// Loading NCCL tuner plugins and asking them (tuner_plugin.h), over whichever ncclTuner table version the library
// exports, newest first.
#include "tuner/tuner_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstring>
#include <mutex>

#include "core/log.h"
#include "core/param.h"
#include "core/plugin_lib.h"
#include "core/result.h"

namespace braid {
namespace {

using namespace tunerabi;

// The newest table `lib` exports, into `t`; false where it exports none.
bool bind(void* lib, TunerPluginLib* t) {
  auto sym = [lib](const char* s) { return dlsym(lib, s); };
  if ((t->v6 = static_cast<const TunerV6*>(sym("ncclTunerPlugin_v6")))) t->version = 6;
  else if ((t->v5 = static_cast<const TunerV5*>(sym("ncclTunerPlugin_v5")))) t->version = 5;
  else if ((t->v4 = static_cast<const TunerV4*>(sym("ncclTunerPlugin_v4")))) t->version = 4;
  else if ((t->v3 = static_cast<const TunerV3*>(sym("ncclTunerPlugin_v3")))) t->version = 3;
  else if ((t->v2 = static_cast<const TunerV2*>(sym("ncclTunerPlugin_v2")))) t->version = 2;
  else return false;
  const char* n = t->v6 ? t->v6->name : t->v5 ? t->v5->name : t->v4 ? t->v4->name : t->v3 ? t->v3->name : t->v2->name;
  t->name = n ? n : "?";
  return true;
}

// Opens `file` and binds its table; null (dlclose'd: nothing of it ran yet) where it has none.
TunerPluginLib* tryLibrary(const std::string& file, std::string* why) {
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *why += (why->empty() ? "" : "; ") + std::string(e ? e : file.c_str());
    return nullptr;
  }
  auto* t = new TunerPluginLib;  // lives as long as the process, as the library does
  t->library = file;
  if (bind(h, t)) return t;
  delete t;
  dlclose(h);
  *why += (why->empty() ? "" : "; ") + file + ": exports none of ncclTunerPlugin_v6 ... _v2";
  return nullptr;
}

}  // namespace

const TunerPluginLib* loadTunerPlugin(const std::string& env, const std::vector<std::string>& fallback,
                                      std::string* why) {
  why->clear();
  if (strcasecmp(env.c_str(), "none") == 0) return nullptr;
  for (const std::string& file : pluginCandidates(env, "tuner"))
    if (TunerPluginLib* t = tryLibrary(file, why)) return t;
  for (const std::string& file : fallback)
    if (TunerPluginLib* t = tryLibrary(file, why)) return t;
  return nullptr;
}

const TunerPluginLib* tunerPlugin() {
  static std::once_flag once;
  static const TunerPluginLib* lib = nullptr;
  std::call_once(once, [&] {
    const std::string env = params::TunerPlugin();
    std::string why;
    lib = loadTunerPlugin(env, pluginCandidates(params::NetPlugin(), "net"), &why);
    if (lib) {
      BRAID_INFO(kSubInit | kSubTuning, "TUNER/Plugin: %s (ncclTunerPlugin_v%d) from %s", lib->name.c_str(),
                 lib->version, lib->library.c_str());
    } else if (!env.empty() && strcasecmp(env.c_str(), "none") != 0) {
      BRAID_WARN("NCCL_TUNER_PLUGIN=%s: no tuner plugin loaded (%s); Braid's own cost model tunes", env.c_str(),
                 why.c_str());
    }
  });
  return lib;
}

std::unique_ptr<TunerPluginComm> TunerPluginComm::open(const TunerPluginLib* lib, size_t nRanks, size_t nNodes,
                                                       uint64_t commId) {
  if (!lib) return nullptr;
  std::unique_ptr<TunerPluginComm> c(new TunerPluginComm);
  c->lib_ = lib;
  ncclResult_t r;
  if (lib->v6 || lib->v5) {
    NvlDomainInfoV5 nvl{};
    nvl.nNvlDomains = static_cast<int>(nNodes);
    nvl.minRanksPerNvlDomain = nvl.maxRanksPerNvlDomain = static_cast<int>(nNodes ? nRanks / nNodes : nRanks);
    ConstantsV5 k{};  // Braid's model prices the table; what the plugin writes here is not read back
    r = lib->v6 ? lib->v6->init(&c->context_, commId, nRanks, nNodes, pluginLog, &nvl, &k)
                : lib->v5->init(&c->context_, commId, nRanks, nNodes, pluginLog, &nvl, &k);
  } else {
    r = lib->v4   ? lib->v4->init(nRanks, nNodes, pluginLog, &c->context_)
        : lib->v3 ? lib->v3->init(nRanks, nNodes, pluginLog, &c->context_)
                  : lib->v2->init(nRanks, nNodes, pluginLog, &c->context_);
  }
  if (r != ncclSuccess) {
    BRAID_WARN("TUNER/Plugin: %s's init failed (%d) for a communicator of %zu ranks on %zu nodes: Braid's own cost "
               "model tunes it", lib->name.c_str(), static_cast<int>(r), nRanks, nNodes);
    c->lib_ = nullptr;  // nothing to finalize
    return nullptr;
  }
  return c;
}

TunerPluginComm::~TunerPluginComm() {
  if (!lib_) return;
  if (lib_->v6) lib_->v6->finalize(context_);
  else if (lib_->v5) lib_->v5->finalize(context_);
  else if (lib_->v4) lib_->v4->destroy(context_);
  else if (lib_->v3) lib_->v3->destroy(context_);
  else lib_->v2->destroy(context_);
}

ncclResult_t TunerPluginComm::choose(int func, size_t bytes, int numPipeOps, float (*costs)[kNumProtos], int* algo,
                                     int* proto, int* nChannels) {
  *algo = *proto = -1;
  bool offered[kNumAlgos][kNumProtos];
  float given[kNumAlgos][kNumProtos];
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) offered[a][p] = (given[a][p] = costs[a][p]) >= 0;
  int nc = 0;
  auto** table = reinterpret_cast<float**>(costs);  // NCCL passes its 2-D array so, and plugins index it back
  ncclResult_t r;
  int pickA = -1, pickP = -1;
  if (lib_->v2) {
    r = lib_->v2->getCollInfo(context_, func, bytes, 0, 0, numPipeOps, &pickA, &pickP, &nc);
  } else if (lib_->v3) {
    r = lib_->v3->getCollInfo(context_, func, bytes, numPipeOps, table, kNumAlgos, kNumProtos, &nc);
  } else {
    r = lib_->v6   ? lib_->v6->getCollInfo(context_, func, bytes, numPipeOps, table, kNumAlgos, kNumProtos, 0, &nc)
        : lib_->v5 ? lib_->v5->getCollInfo(context_, func, bytes, numPipeOps, table, kNumAlgos, kNumProtos, 0, &nc)
                   : lib_->v4->getCollInfo(context_, func, bytes, numPipeOps, table, kNumAlgos, kNumProtos, 0, &nc);
  }
  if (r != ncclSuccess) {
    static const char* const kFuncs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
    return recordError(r, "tuner plugin %s (v%d) failed (%d) on %s of %zu bytes (NCCL_TUNER_PLUGIN=none tunes "
                       "without it)", lib_->name.c_str(), lib_->version, static_cast<int>(r),
                       func >= 0 && func < 5 ? kFuncs[func] : "a collective", bytes);
  }
  *nChannels = nc > 0 ? nc : 0;
  if (pickA >= 0 && pickA < kNumAlgos && pickP >= 0 && pickP < kNumProtos && offered[pickA][pickP]) {
    *algo = pickA;
    *proto = pickP;
    return ncclSuccess;
  }
  // A table handed back as it came is no opinion: Braid's own plan stands (its one-shots included, which the table
  // can only show as Ring entries).
  bool changed = false;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) changed = changed || costs[a][p] != given[a][p];
  if (!changed) return ncclSuccess;
  // The cheapest entry left among those offered (a plugin lowering one entry to 0 picks it; one setting an entry
  // Braid does not run cannot make it run).
  float best = -1;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (offered[a][p] && costs[a][p] >= 0 && (best < 0 || costs[a][p] < best)) {
        best = costs[a][p];
        *algo = a;
        *proto = p;
      }
  return ncclSuccess;
}

}  // namespace braid
