// NCCL tuner plugins (NCCL_TUNER_PLUGIN): a library exporting ncclTunerPlugin_v6 ... _v2 (tuner_plugin_abi.h) that
// adjusts the cost of each (algorithm, protocol) of a collective, or picks one, and may set its channel count. Found
// as NCCL finds it: NCCL_TUNER_PLUGIN's names (unset: libnccl-tuner.so; none: no plugin), else the network plugin's
// libraries (NCCL_NET_PLUGIN's names), opened for their tuner table only: the network plugin's init is not run.
// Each GPU communicator opens its own context (the plugin's init) and the planner asks it about each collective of
// NCCL's five (coll_plan.cc), with Braid's cost model's predictions as the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tuner/tuner_plugin_abi.h"

namespace braid {

// A loaded tuner table (one per process, kept as long as the process: the library stays loaded).
struct TunerPluginLib {
  std::string library;  // the file opened
  std::string name;     // the table's name
  int version = 0;      // 2 ... 6
  const tunerabi::TunerV2* v2 = nullptr;
  const tunerabi::TunerV3* v3 = nullptr;
  const tunerabi::TunerV4* v4 = nullptr;
  const tunerabi::TunerV5* v5 = nullptr;
  const tunerabi::TunerV6* v6 = nullptr;
};

// Loads the first library of `env`'s candidates exporting a tuner table, else of `fallback` (the network plugin's
// candidates); "none" loads nothing. Null where none does; *why says what was tried. Not cached: tunerPlugin() is
// the process's.
const TunerPluginLib* loadTunerPlugin(const std::string& env, const std::vector<std::string>& fallback,
                                      std::string* why);
// The process's tuner plugin, loaded on first call from NCCL_TUNER_PLUGIN and NCCL_NET_PLUGIN (one line says which,
// or why none where one was asked for).
const TunerPluginLib* tunerPlugin();

class TunerPluginComm {
 public:
  // One communicator's context: the plugin's init with its size. Null where init fails (warned).
  static std::unique_ptr<TunerPluginComm> open(const TunerPluginLib* lib, size_t nRanks, size_t nNodes,
                                               uint64_t commId);
  ~TunerPluginComm();
  TunerPluginComm(const TunerPluginComm&) = delete;
  TunerPluginComm& operator=(const TunerPluginComm&) = delete;
  const TunerPluginLib& lib() const { return *lib_; }

  // Asks about one collective (func: tunerabi::kFunc*). costs: kNumAlgos rows of kNumProtos, Braid's predicted
  // microseconds, kIgnore where Braid does not run it; the plugin may change them. *algo, *proto: the cheapest entry
  // Braid offered that the plugin left (v2: the plugin's own pick where it names an offered one), -1 where it left
  // none or handed the table back unchanged (no opinion); *nChannels: the plugin's count, 0 where it set none. The
  // plugin's error where its call failed (recorded): as in NCCL the collective then fails, since a rank tuning alone
  // could run it differently from the others.
  ncclResult_t choose(int func, size_t bytes, int numPipeOps, float (*costs)[tunerabi::kNumProtos], int* algo,
                      int* proto, int* nChannels);

 private:
  TunerPluginComm() = default;
  const TunerPluginLib* lib_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace braid
