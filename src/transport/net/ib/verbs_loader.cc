// Fills the VerbsApi table (verbs_api.h) from libibverbs.so.1 with dlopen, once per process, or from the test
// provider BRAID_TEST_VERBS_PROVIDER names. Symbols that libibverbs exports in two ABI versions are taken at
// IBVERBS_1.1 (the one its headers describe); the calls verbs.h defines inline are rebuilt here over the
// context's ops, since calling them would link libibverbs.
#include "transport/net/ib/verbs_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/param.h"

namespace braid {

#if BRAID_HAVE_IBVERBS
namespace {

VerbsApi gApi{};
VerbsLoad gLoad;

// Entry points of libibverbs that the wrappers below call.
int (*gQueryPortSym)(ibv_context*, uint8_t, _compat_ibv_port_attr*) = nullptr;
int (*gQueryGidExSym)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t) = nullptr;

// ibv_query_port as verbs.h defines it: the extended op where the provider has one, else the exported call.
int realQueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) {
  verbs_context* vctx = verbs_get_ctx_op(ctx, query_port);
  if (vctx) return vctx->query_port(ctx, port, attr, sizeof(*attr));
  std::memset(attr, 0, sizeof(*attr));
  return gQueryPortSym(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

IbGidType realQueryGidType(ibv_context* ctx, uint8_t port, int index) {
  if (gQueryGidExSym) {
    ibv_gid_entry e{};
    if (gQueryGidExSym(ctx, port, static_cast<uint32_t>(index), &e, 0, sizeof(e)) == 0) {
      switch (e.gid_type) {
        case IBV_GID_TYPE_IB:
          return IbGidType::Ib;
        case IBV_GID_TYPE_ROCE_V1:
          return IbGidType::RoceV1;
        case IBV_GID_TYPE_ROCE_V2:
          return IbGidType::RoceV2;
        default:
          return IbGidType::Unknown;
      }
    }
  }
  // Older libibverbs: the kernel's sysfs names the type ("IB/RoCE v1" or "RoCE v2").
  char path[512];
  snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d", ctx->device->name, port, index);
  FILE* f = fopen(path, "r");
  if (!f) return IbGidType::Unknown;
  char buf[64] = {};
  const bool got = fgets(buf, sizeof(buf), f) != nullptr;
  fclose(f);
  if (!got) return IbGidType::Unknown;
  if (strstr(buf, "RoCE v2")) return IbGidType::RoceV2;
  if (strstr(buf, "v1")) return IbGidType::RoceV1;
  return IbGidType::Unknown;
}

int realPostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return qp->context->ops.post_send(qp, wr, bad); }
int realPostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) { return qp->context->ops.post_recv(qp, wr, bad); }
int realPollCq(ibv_cq* cq, int n, ibv_wc* wc) { return cq->context->ops.poll_cq(cq, n, wc); }
int realReqNotifyCq(ibv_cq* cq, int solicitedOnly) { return cq->context->ops.req_notify_cq(cq, solicitedOnly); }

template <typename Fn>
bool take(void* lib, const char* name, const char* version, Fn* out, std::string* missing) {
  void* p = version ? dlvsym(lib, name, version) : nullptr;
  if (!p) p = dlsym(lib, name);
  *out = reinterpret_cast<Fn>(p);
  if (!p && missing) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
  return p != nullptr;
}

void loadLibibverbs() {
  const char* lib = "libibverbs.so.1";
  gLoad.source = lib;
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    gLoad.why = std::string("cannot load ") + lib + ": " + dlerror();
    return;
  }
  const char* v = "IBVERBS_1.1";
  std::string missing;
  VerbsApi& a = gApi;
  take(h, "ibv_get_device_list", v, &a.getDeviceList, &missing);
  take(h, "ibv_free_device_list", v, &a.freeDeviceList, &missing);
  take(h, "ibv_get_device_name", v, &a.getDeviceName, &missing);
  take(h, "ibv_open_device", v, &a.openDevice, &missing);
  take(h, "ibv_close_device", v, &a.closeDevice, &missing);
  take(h, "ibv_query_device", v, &a.queryDevice, &missing);
  take(h, "ibv_query_port", v, &gQueryPortSym, &missing);
  take(h, "ibv_query_gid", v, &a.queryGid, &missing);
  take(h, "_ibv_query_gid_ex", "IBVERBS_1.11", &gQueryGidExSym, nullptr);  // optional: sysfs otherwise
  take(h, "ibv_alloc_pd", v, &a.allocPd, &missing);
  take(h, "ibv_dealloc_pd", v, &a.deallocPd, &missing);
  take(h, "ibv_reg_mr", v, &a.regMr, &missing);
  take(h, "ibv_reg_dmabuf_mr", "IBVERBS_1.12", &a.regDmabufMr, nullptr);  // optional: dma-buf GDR only
  take(h, "ibv_dereg_mr", v, &a.deregMr, &missing);
  take(h, "ibv_create_comp_channel", "IBVERBS_1.0", &a.createCompChannel, &missing);
  take(h, "ibv_destroy_comp_channel", "IBVERBS_1.0", &a.destroyCompChannel, &missing);
  take(h, "ibv_create_cq", v, &a.createCq, &missing);
  take(h, "ibv_destroy_cq", v, &a.destroyCq, &missing);
  take(h, "ibv_get_cq_event", v, &a.getCqEvent, &missing);
  take(h, "ibv_ack_cq_events", v, &a.ackCqEvents, &missing);
  take(h, "ibv_create_qp", v, &a.createQp, &missing);
  take(h, "ibv_modify_qp", v, &a.modifyQp, &missing);
  take(h, "ibv_destroy_qp", v, &a.destroyQp, &missing);
  take(h, "ibv_get_async_event", v, &a.getAsyncEvent, &missing);
  take(h, "ibv_ack_async_event", v, &a.ackAsyncEvent, &missing);
  take(h, "ibv_wc_status_str", v, &a.wcStatusStr, &missing);
  take(h, "ibv_event_type_str", v, &a.eventTypeStr, &missing);
  if (!missing.empty()) {
    gLoad.why = std::string(lib) + " lacks " + missing;
    dlclose(h);
    return;
  }
  a.queryPort = realQueryPort;
  a.queryGidType = realQueryGidType;
  a.postSend = realPostSend;
  a.postRecv = realPostRecv;
  a.pollCq = realPollCq;
  a.reqNotifyCq = realReqNotifyCq;
  gLoad.ok = true;  // the library stays loaded for the process's lifetime
}

void loadProvider(const std::string& path) {
  gLoad.source = path;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    gLoad.why = "cannot load the verbs provider " + path + ": " + dlerror();
    return;
  }
  auto fill = reinterpret_cast<VerbsProviderFillFn>(dlsym(h, kVerbsProviderFillSymbol));
  if (!fill || fill(&gApi, sizeof(gApi)) != 0) {
    gLoad.why = "the verbs provider " + path + (fill ? " refused to fill the table" : " has no braidVerbsProviderFill");
    gApi = VerbsApi{};
    dlclose(h);
    return;
  }
  gLoad.ok = true;
}

}  // namespace

const VerbsLoad& loadVerbs() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string provider = params::TestVerbsProvider();
    if (provider.empty()) {
      loadLibibverbs();
    } else {
      loadProvider(provider);
    }
  });
  return gLoad;
}

const VerbsApi& verbs() { return gApi; }

#else

const VerbsLoad& loadVerbs() {
  static VerbsLoad l{false, "", "this build of Braid has no verbs support (built without <infiniband/verbs.h>)"};
  return l;
}

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
