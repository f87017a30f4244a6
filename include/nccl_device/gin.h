/* Braid device API: GPU-initiated networking (GIN) of NCCL 2.28.9, declared so that programs written against
 * it compile, with bodies that trap with a message: Braid has no GIN. The completion-action types, ncclGin and
 * ncclGinBarrierSession keep NCCL's names and signatures. */
#ifndef NCCL_DEVICE_GIN_H_
#define NCCL_DEVICE_GIN_H_

#include "core.h"
#include "net_device.h"
#include "ptr.h"

typedef enum ncclGinSignalOp_t { ncclGinSignalInc = 0, ncclGinSignalAdd = 1 } ncclGinSignalOp_t;

/* The GIN backends an ncclGin may dispatch to (bits indexed by ncclNetDeviceType). */
#define NCCL_GIN_BACKEND_MASK_ALL \
  ((1u << (unsigned)NCCL_NET_DEVICE_GIN_PROXY) | (1u << (unsigned)NCCL_NET_DEVICE_GIN_GDAKI))

#ifdef __cplusplus
/* Space a kernel may reserve in shared memory for a put's descriptor. */
struct ncclGinDescriptorSmem {
  alignas(16) char space[64];
};
#endif

#if defined(__CUDACC__)
/* Completion actions of put/signal. */
struct ncclGin_None {};
struct ncclGin_SignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_SignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_CounterInc {
  ncclGinCounter_t counter;
};
struct ncclGin_DescriptorSmem {
  ncclGinDescriptorSmem* descriptor;
};

enum class ncclGinFenceLevel { Relaxed };

#define BRAID_GIN_TRAP() braidDeviceApiTrap("ncclGin: GPU-initiated networking is not supported by Braid")

template <unsigned backendMask>
struct ncclGin_BackendMask {
  ncclDevComm const& comm;
  uint32_t nContexts : 8, contextId : 8, _ginBackend : 8;

  NCCL_DEVICE_INLINE ncclGin_BackendMask(ncclDevComm const& devComm, int contextIndex)
      : comm(devComm), nContexts(0), contextId(0), _ginBackend(0), _ginHandle(nullptr), _signalShadows(nullptr) {
    BRAID_GIN_TRAP();
  }

  template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void put(ncclTeam, int peer, ncclWindow_t dstWnd, size_t dstOffset, ncclWindow_t srcWnd,
                              size_t srcOffset, size_t bytes, RemoteAction remoteAction = ncclGin_None{},
                              LocalAction localAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                              DescriptorSmem descriptor = ncclGin_None{},
                              cuda::thread_scope alreadyReleased = cuda::thread_scope_thread,
                              cuda::thread_scope expected_scope = cuda::thread_scope_device) const {
    BRAID_GIN_TRAP();
  }

  template <typename T, typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void put(ncclTeam, int peer, ncclSymPtr<T> dstElts, ncclSymPtr<T> srcElts, size_t nElts,
                              RemoteAction remoteAction = ncclGin_None{}, LocalAction localAction = ncclGin_None{},
                              Coop coop = ncclCoopThread{}, DescriptorSmem descriptor = ncclGin_None{},
                              cuda::thread_scope alreadyReleased = cuda::thread_scope_thread,
                              cuda::thread_scope expected_scope = cuda::thread_scope_device) const {
    BRAID_GIN_TRAP();
  }

  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam, int peer, ncclWindow_t dstWnd, size_t dstOffset, T value,
                                   RemoteAction remoteAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                                   DescriptorSmem descriptor = ncclGin_None{},
                                   cuda::thread_scope alreadyReleased = cuda::thread_scope_thread,
                                   cuda::thread_scope expected_scope = cuda::thread_scope_device) const {
    BRAID_GIN_TRAP();
  }

  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam, int peer, ncclSymPtr<T> dst, T value,
                                   RemoteAction remoteAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                                   DescriptorSmem descriptor = ncclGin_None{},
                                   cuda::thread_scope alreadyReleased = cuda::thread_scope_thread,
                                   cuda::thread_scope expected_scope = cuda::thread_scope_device) const {
    BRAID_GIN_TRAP();
  }

  template <typename RemoteAction, typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void signal(ncclTeam, int peer, RemoteAction remoteAction, Coop coop = ncclCoopThread(),
                                 DescriptorSmem descriptor = ncclGin_None{},
                                 cuda::thread_scope alreadyReleased = cuda::thread_scope_thread,
                                 cuda::thread_scope expected_scope = cuda::thread_scope_device) const {
    BRAID_GIN_TRAP();
  }

  template <typename Coop>
  NCCL_DEVICE_INLINE void flush(Coop, cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  NCCL_DEVICE_INLINE uint64_t readCounter(ncclGinCounter_t counter, int bits = 56,
                                          cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  template <typename Coop>
  NCCL_DEVICE_INLINE void waitCounter(Coop, ncclGinCounter_t counter, uint64_t least, int bits = 56,
                                      cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  NCCL_DEVICE_INLINE uint64_t* getSignalShadowPtr(ncclGinSignal_t signal) const { BRAID_GIN_TRAP(); }
  NCCL_DEVICE_INLINE void increaseSignalShadow(ncclGinSignal_t signal, uint64_t delta) const { BRAID_GIN_TRAP(); }

  NCCL_DEVICE_INLINE uint64_t readSignal(ncclGinSignal_t signal, int bits = 64,
                                         cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignal(Coop, ncclGinSignal_t signal, uint64_t least, int bits = 64,
                                     cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignalMeetShadow(Coop, ncclGinSignal_t signal, int bits = 64,
                                               cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  template <typename Coop, typename Uint>
  NCCL_DEVICE_INLINE void waitSignalFollowShadow(Coop, ncclGinSignal_t signal, Uint leastDelta, Uint* before,
                                                 Uint* delta, int bits = 64,
                                                 cuda::memory_order ord = cuda::memory_order_acquire) const {
    BRAID_GIN_TRAP();
  }

  NCCL_DEVICE_INLINE void resetCounter(ncclGinCounter_t counter) const { BRAID_GIN_TRAP(); }
  NCCL_DEVICE_INLINE void resetSignal(ncclGinSignal_t signal) const { BRAID_GIN_TRAP(); }

  void* _ginHandle;
  uint64_t* _signalShadows;
};

template <ncclNetDeviceType backend>
using ncclGin_BackendOne = ncclGin_BackendMask<(1u << (int)backend)>;

using ncclGin = ncclGin_BackendMask<NCCL_GIN_BACKEND_MASK_ALL>;

/* A barrier over a team through GIN signals (the rail team, typically). */
template <typename Coop>
struct ncclGinBarrierSession {
  Coop coop;
  ncclGin net;
  ncclTeam team;
  ncclGinBarrierHandle handle;
  int index;
  uint32_t epoch;
  ncclGinSignal_t signal;

  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop c, ncclGin gin, ncclTeam tm, ncclGinBarrierHandle h,
                                           uint32_t barrierIndex)
      : coop(c), net(gin), team(tm), handle(h), index(int(barrierIndex)), epoch(0), signal(0) {
    BRAID_GIN_TRAP();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop c, ncclGin gin, ncclTeamTagRail, uint32_t barrierIndex)
      : ncclGinBarrierSession(c, gin, ncclTeamRail(gin.comm), gin.comm.railGinBarrier, barrierIndex) {}
  NCCL_DEVICE_INLINE ~ncclGinBarrierSession() {}

  ncclGinBarrierSession(ncclGinBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE void sync(Coop, cuda::memory_order, ncclGinFenceLevel) { BRAID_GIN_TRAP(); }
};

#undef BRAID_GIN_TRAP
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_H_ */
