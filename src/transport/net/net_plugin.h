// NCCL network plugins (libnccl-net*.so) as a NetBackend. NCCL_NET_PLUGIN names the libraries to try, as NCCL reads
// it: unset, libnccl-net.so; "none", no plugin; else a comma-separated list, each a library name or path, or a NAME
// standing for libnccl-net-NAME.so. The first that loads, exports ncclNetPlugin_v10, v9 or v8, initialises and has a
// device serves every network connection of the process (selectNetBackend), unless NCCL_NET names Socket or IB.
// net_plugin_load.cc opens the library and smooths the table versions into PluginNet; net_plugin.cc runs the
// connections.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "transport/net/net_backend.h"
#include "transport/net/net_plugin_abi.h"

namespace braid {

// The loaded plugin's calls, whichever table version it exports (sizes as size_t; a v8 table takes int, and Braid's
// steps stay below 2 GiB). Immutable once loaded; the plugin's own calls are thread-safe across comms (NCCL calls
// them from several threads too).
class PluginNet {
 public:
  struct Device {  // those that take host memory (NCCL_PTR_HOST)
    int index = 0;  // the plugin's own number for it
    std::string name;
    std::string pciPath;  // its sysfs device directory ("" for a virtual device)
    int ptrSupport = 0;
    int speedMbps = 0;
    size_t maxP2pBytes = 0;  // v9 and v10: the largest message it takes (0 where v8 does not say)
  };
  int version = 0;      // 8, 9 or 10
  std::string name;     // the table's name (NCCL_NET selects it by this)
  std::string library;  // the file opened
  std::vector<Device> devices;

  ncclResult_t listen(int dev, void* handle, void** listenComm) const;
  // Non-blocking, as in NCCL: *comm stays null until the connection is made; call again.
  ncclResult_t connect(int dev, void* handle, void** sendComm) const;
  ncclResult_t accept(void* listenComm, void** recvComm) const;
  ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle) const;  // host memory
  ncclResult_t deregMr(void* comm, void* mhandle) const;
  // *request null: the plugin cannot take it now; post again later.
  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) const;
  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void** request) const;
  ncclResult_t test(void* request, int* done, int* size) const;
  ncclResult_t closeSend(void* sendComm) const;
  ncclResult_t closeRecv(void* recvComm) const;
  ncclResult_t closeListen(void* listenComm) const;

  const netabi::NetV8* v8 = nullptr;
  const netabi::NetV9* v9 = nullptr;
  const netabi::NetV10* v10 = nullptr;
};

struct NetPluginStatus {
  const PluginNet* net = nullptr;  // null: none serves
  bool asked = false;              // NCCL_NET_PLUGIN named one (not unset, not "none")
  std::string why;                 // what was tried, where none serves
};

// Loads the plugin once per process (NCCL_NET_PLUGIN is read then) and says what came of it; thread-safe.
const NetPluginStatus& netPlugin();
// The search itself for an NCCL_NET_PLUGIN value (tests load several); a plugin found stays loaded.
NetPluginStatus loadNetPlugin(const std::string& env);

// The backend over `net`: one per process (netPluginBackend), or a new one (tests).
NetBackend* netPluginBackend(const PluginNet* net);
std::unique_ptr<NetBackend> makeNetPluginBackend(const PluginNet* net);
// Closes the plugin refused in this process (a connection closed with requests outstanding, where a plugin will not):
// what the clean end before close (NetComm::startClose) is there to prevent. Logged at INFO each time.
uint64_t netPluginRefusedCloses();

}  // namespace braid
