// Finding, opening and initialising an NCCL network plugin (net_plugin.h), and PluginNet's calls over whichever
// ncclNet table version the library exports. Library names are tried as NCCL tries them, so a plugin installed for
// NCCL (AWS OFI, Google's, a site's own) serves Braid unchanged.
#include <dlfcn.h>
#include <strings.h>

#include <mutex>
#include <string>
#include <type_traits>

#include "core/log.h"
#include "core/param.h"
#include "core/plugin_lib.h"
#include "core/result.h"
#include "transport/net/net_plugin.h"

namespace braid {
namespace {

// NCCL hands v10 plugins its profiler's callback, and plugins built from NCCL's own code call it unchecked: Braid's
// records nothing and starts no event.
extern "C" ncclResult_t pluginProfilerCallback(void** eHandle, int, void*, int64_t, void*) {
  if (eHandle) *eHandle = nullptr;
  return ncclSuccess;
}

// Takes table t (version v) as net's when the library exports it (sym: its symbol) and its init succeeds.
template <typename Table, typename Init>
bool take(void* lib, const char* sym, int v, Table** slot, Init init, PluginNet* net, std::string* why) {
  auto* t = static_cast<Table*>(dlsym(lib, sym));
  if (!t) return false;
  *slot = t;
  net->version = v;
  net->name = t->name ? t->name : "?";
  if (init(t) != ncclSuccess) *why = net->library + ": " + sym + " init failed";
  return true;
}

// What Braid keeps of a device's properties (v8's struct, or v9's, which v10 shares). v9's message-size bounds are
// kept but not enforced: a message is at most one FIFO step (NCCL_BUFFSIZE / 8, 512 KiB by default). NVIDIA NCCL
// refuses a device that leaves them at 0, so a plugin tested with Braid alone is told.
template <typename Props>
void keep(const Props& p, const std::string& plugin, int index, PluginNet::Device* dev) {
  dev->name = p.name ? p.name : "";
  dev->pciPath = p.pciPath ? p.pciPath : "";
  dev->ptrSupport = p.ptrSupport;
  dev->speedMbps = p.speed;
  if constexpr (std::is_same<Props, netabi::PropertiesV9>::value) {
    dev->maxP2pBytes = p.maxP2pBytes;
    if (p.maxP2pBytes == 0 || p.maxCollBytes == 0)
      BRAID_WARN("NET/Plugin: %s device %d (%s) reports maxP2pBytes %zu, maxCollBytes %zu: NVIDIA NCCL refuses 0",
                 plugin.c_str(), index, dev->name.c_str(), p.maxP2pBytes, p.maxCollBytes);
  }
}

// Fills `net` from the newest table the library exports; false with *why where it has none or it fails to start.
// *started: its init succeeded (the library must then stay loaded: it may have started threads).
bool bind(void* lib, const std::string& file, PluginNet* net, std::string* why, bool* started) {
  net->library = file;
  why->clear();
  const bool found =
      take(lib, "ncclNetPlugin_v10", 10, &net->v10,
           [](const netabi::NetV10* t) { return t->init(pluginLog, pluginProfilerCallback); }, net, why) ||
      take(lib, "ncclNetPlugin_v9", 9, &net->v9, [](const netabi::NetV9* t) { return t->init(pluginLog); }, net, why) ||
      take(lib, "ncclNetPlugin_v8", 8, &net->v8, [](const netabi::NetV8* t) { return t->init(pluginLog); }, net, why);
  if (!found) *why = file + ": exports none of ncclNetPlugin_v10, _v9, _v8";
  if (!why->empty()) return false;
  *started = true;
  int n = 0;
  const ncclResult_t r = net->v10 ? net->v10->devices(&n) : net->v9 ? net->v9->devices(&n) : net->v8->devices(&n);
  if (r != ncclSuccess || n <= 0) {
    *why = file + " (" + net->name + "): no device";
    return false;
  }
  for (int d = 0; d < n; ++d) {
    PluginNet::Device dev;
    dev.index = d;
    // A device the plugin cannot describe stays empty: it takes no host memory and is not used.
    if (net->v8) {
      netabi::PropertiesV8 p{};
      if (net->v8->getProperties(d, &p) == ncclSuccess) keep(p, net->name, d, &dev);
    } else {
      netabi::PropertiesV9 p{};
      if ((net->v10 ? net->v10->getProperties(d, &p) : net->v9->getProperties(d, &p)) == ncclSuccess)
        keep(p, net->name, d, &dev);
    }
    if (dev.ptrSupport & netabi::kPtrHost) {
      net->devices.push_back(dev);
    } else {
      BRAID_INFO(kSubNet | kSubInit, "NET/Plugin: %s device %d (%s) takes no host memory (NCCL_PTR_HOST): not used",
                 net->name.c_str(), d, dev.name.c_str());
    }
  }
  if (net->devices.empty()) *why = file + " (" + net->name + "): no device takes host memory (NCCL_PTR_HOST)";
  return !net->devices.empty();
}

}  // namespace

NetPluginStatus loadNetPlugin(const std::string& env) {
  NetPluginStatus st;
  st.asked = !env.empty() && strcasecmp(env.c_str(), "none") != 0;
  std::string tried;
  for (const std::string& file : pluginCandidates(env, "net")) {
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(e ? e : file.c_str());
      continue;
    }
    auto* net = new PluginNet;  // lives as long as the process, as the library does
    std::string why;
    bool started = false;
    if (!bind(lib, file, net, &why, &started)) {
      delete net;
      if (!started) dlclose(lib);  // once started, a plugin may run threads of its own: it stays
      tried += (tried.empty() ? "" : "; ") + why;
      continue;
    }
    st.net = net;
    return st;
  }
  st.why = env.empty() ? "no libnccl-net.so (" + tried + ")" : tried.empty() ? "NCCL_NET_PLUGIN=none" : tried;
  return st;
}

const NetPluginStatus& netPlugin() {
  static NetPluginStatus st;
  static std::once_flag once;
  std::call_once(once, [] {
    st = loadNetPlugin(params::NetPlugin());
    if (st.net) {
      std::string devs;
      for (const PluginNet::Device& d : st.net->devices) devs += (devs.empty() ? "" : ", ") + d.name;
      BRAID_INFO(kSubNet | kSubInit, "NET/Plugin: %s (ncclNet_v%d of %s), %zu device(s): %s", st.net->name.c_str(),
                 st.net->version, st.net->library.c_str(), st.net->devices.size(), devs.c_str());
    } else if (st.asked) {
      BRAID_WARN("NET/Plugin: NCCL_NET_PLUGIN=%s serves no network plugin (%s); Braid's own backends carry the network",
                 params::NetPlugin().c_str(), st.why.c_str());
    } else {
      BRAID_INFO(kSubNet | kSubInit, "NET/Plugin: none loaded (%s)", st.why.c_str());
    }
  });
  return st;
}

// ---- PluginNet: one call, three table versions ----

ncclResult_t PluginNet::listen(int dev, void* handle, void** lc) const {
  return v10 ? v10->listen(dev, handle, lc) : v9 ? v9->listen(dev, handle, lc) : v8->listen(dev, handle, lc);
}

ncclResult_t PluginNet::connect(int dev, void* handle, void** sc) const {
  netabi::DeviceHandle* none = nullptr;  // no device offload asked for
  if (v10) {
    static netabi::CommConfigV10 config{-1};  // no traffic class; it outlives every call, as NCCL's does
    return v10->connect(dev, &config, handle, sc, &none);
  }
  return v9 ? v9->connect(dev, handle, sc, &none) : v8->connect(dev, handle, sc, &none);
}

ncclResult_t PluginNet::accept(void* lc, void** rc) const {
  netabi::DeviceHandle* none = nullptr;
  return v10 ? v10->accept(lc, rc, &none) : v9 ? v9->accept(lc, rc, &none) : v8->accept(lc, rc, &none);
}

ncclResult_t PluginNet::regMr(void* comm, void* data, size_t size, void** mh) const {
  const int host = netabi::kPtrHost;
  return v10 ? v10->regMr(comm, data, size, host, mh)
             : v9 ? v9->regMr(comm, data, size, host, mh) : v8->regMr(comm, data, size, host, mh);
}

ncclResult_t PluginNet::deregMr(void* comm, void* mh) const {
  return v10 ? v10->deregMr(comm, mh) : v9 ? v9->deregMr(comm, mh) : v8->deregMr(comm, mh);
}

ncclResult_t PluginNet::isend(void* sc, void* data, size_t size, int tag, void* mh, void** req) const {
  static char pHandle;  // NCCL passes its profiler's handle; plugins may read it unchecked
  if (v10) return v10->isend(sc, data, size, tag, mh, &pHandle, req);
  if (v9) return v9->isend(sc, data, size, tag, mh, req);
  return v8->isend(sc, data, static_cast<int>(size), tag, mh, req);
}

ncclResult_t PluginNet::irecv(void* rc, void* data, size_t size, int tag, void* mh, void** req) const {
  void* datas[1] = {data};
  int tags[1] = {tag};
  void* mhs[1] = {mh};
  if (v10) {
    static char pHandle;
    size_t sizes[1] = {size};
    void* pHandles[1] = {&pHandle};
    return v10->irecv(rc, 1, datas, sizes, tags, mhs, pHandles, req);
  }
  if (v9) {
    size_t sizes[1] = {size};
    return v9->irecv(rc, 1, datas, sizes, tags, mhs, req);
  }
  int sizes[1] = {static_cast<int>(size)};
  return v8->irecv(rc, 1, datas, sizes, tags, mhs, req);
}

ncclResult_t PluginNet::test(void* req, int* done, int* size) const {
  return v10 ? v10->test(req, done, size) : v9 ? v9->test(req, done, size) : v8->test(req, done, size);
}

ncclResult_t PluginNet::closeSend(void* c) const {
  return v10 ? v10->closeSend(c) : v9 ? v9->closeSend(c) : v8->closeSend(c);
}

ncclResult_t PluginNet::closeRecv(void* c) const {
  return v10 ? v10->closeRecv(c) : v9 ? v9->closeRecv(c) : v8->closeRecv(c);
}

ncclResult_t PluginNet::closeListen(void* c) const {
  return v10 ? v10->closeListen(c) : v9 ? v9->closeListen(c) : v8->closeListen(c);
}

}  // namespace braid
