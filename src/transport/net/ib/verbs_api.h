// The verbs calls the IB backend makes, as a table of function pointers (types from <infiniband/verbs.h>).
// verbs_loader.cc fills it from libibverbs.so.1 through dlopen, so the library runs where rdma-core is absent;
// the calls verbs.h defines inline (post_send, poll_cq, query_port...) are wrapped there, so that a provider
// that is not libibverbs can replace every entry. Tests name such a provider (an emulator of queue pairs over
// shared memory) with BRAID_TEST_VERBS_PROVIDER: a shared object exporting braidVerbsProviderFill.
#pragma once

// Built where <infiniband/verbs.h> exists (libibverbs-dev), unless BRAID_NO_IBVERBS asks for a build without.
#if !defined(BRAID_NO_IBVERBS) && __has_include(<infiniband/verbs.h>)
#define BRAID_HAVE_IBVERBS 1
#include <infiniband/verbs.h>
#else
#define BRAID_HAVE_IBVERBS 0
#endif

#include <cstddef>
#include <string>

#include "nccl.h"

namespace braid {

#if BRAID_HAVE_IBVERBS

// GID types as queryGidType reports them.
enum class IbGidType : int { Unknown = -1, Ib = 0, RoceV1 = 1, RoceV2 = 2 };

struct VerbsApi {
  ibv_device** (*getDeviceList)(int* num);
  void (*freeDeviceList)(ibv_device** list);
  const char* (*getDeviceName)(ibv_device* dev);
  ibv_context* (*openDevice)(ibv_device* dev);
  int (*closeDevice)(ibv_context* ctx);
  int (*queryDevice)(ibv_context* ctx, ibv_device_attr* attr);
  int (*queryPort)(ibv_context* ctx, uint8_t port, ibv_port_attr* attr);
  int (*queryGid)(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid);
  // The type of GID `index` (ibv_query_gid_ex where libibverbs has it, else sysfs); Unknown when neither says.
  IbGidType (*queryGidType)(ibv_context* ctx, uint8_t port, int index);
  ibv_pd* (*allocPd)(ibv_context* ctx);
  int (*deallocPd)(ibv_pd* pd);
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access);
  // Null where libibverbs predates dma-buf registration.
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access);
  int (*deregMr)(ibv_mr* mr);
  ibv_comp_channel* (*createCompChannel)(ibv_context* ctx);
  int (*destroyCompChannel)(ibv_comp_channel* ch);
  ibv_cq* (*createCq)(ibv_context* ctx, int cqe, void* cqContext, ibv_comp_channel* ch, int vector);
  int (*destroyCq)(ibv_cq* cq);
  int (*reqNotifyCq)(ibv_cq* cq, int solicitedOnly);
  int (*getCqEvent)(ibv_comp_channel* ch, ibv_cq** cq, void** cqContext);
  void (*ackCqEvents)(ibv_cq* cq, unsigned int n);
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*destroyQp)(ibv_qp* qp);
  int (*postSend)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
  int (*postRecv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
  int (*pollCq)(ibv_cq* cq, int n, ibv_wc* wc);
  int (*getAsyncEvent)(ibv_context* ctx, ibv_async_event* ev);
  void (*ackAsyncEvent)(ibv_async_event* ev);
  const char* (*wcStatusStr)(ibv_wc_status status);
  const char* (*eventTypeStr)(ibv_event_type type);
};

// A provider's entry point: fills *api (sizeof(VerbsApi) == apiBytes, else it must refuse); 0 on success.
using VerbsProviderFillFn = int (*)(VerbsApi* api, size_t apiBytes);
constexpr const char* kVerbsProviderFillSymbol = "braidVerbsProviderFill";

#endif  // BRAID_HAVE_IBVERBS

struct VerbsLoad {
  bool ok = false;
  std::string source;  // the library it came from
  std::string why;     // when !ok: why not (for the INFO line that says sockets carry the network)
};

// Loads the table once per process (thread-safe): libibverbs.so.1, or the BRAID_TEST_VERBS_PROVIDER library.
// Never fails loudly: a missing library or symbol is a VerbsLoad with ok == false and a reason.
const VerbsLoad& loadVerbs();
#if BRAID_HAVE_IBVERBS
// The loaded table; only after loadVerbs().ok.
const VerbsApi& verbs();
#endif

}  // namespace braid
