/* Braid device API: ncclSymPtr<T>, a typed position (window, byte offset) in a symmetric window that names the
 * same element on every rank; it resolves to this rank's or an LSA peer's copy on the device. */
#ifndef NCCL_DEVICE_PTR_H_
#define NCCL_DEVICE_PTR_H_

#include "core.h"

#ifdef __cplusplus
template <typename T>
struct ncclSymPtr {
  using ElementType = T;
  ncclWindow_t window;
  size_t offset;  // bytes

  NCCL_HOST_DEVICE_INLINE constexpr ncclSymPtr(ncclWindow_t w = nullptr, size_t byteOffset = 0)
      : window(w), offset(byteOffset) {}

  template <typename U>
  NCCL_HOST_DEVICE_INLINE operator ncclSymPtr<U>() const {
    return ncclSymPtr<U>(window, offset);
  }

  /* Element arithmetic, as on T*. */
  template <typename Int>
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(Int d) {
    offset += static_cast<size_t>(static_cast<long long>(d) * static_cast<long long>(sizeof(T)));
    return *this;
  }
  template <typename Int>
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(Int d) {
    offset -= static_cast<size_t>(static_cast<long long>(d) * static_cast<long long>(sizeof(T)));
    return *this;
  }

#if defined(__CUDACC__)
  NCCL_DEVICE_INLINE T* localPtr() const { return static_cast<T*>(ncclGetLocalPointer(window, offset)); }
  NCCL_DEVICE_INLINE T* lsaPtr(int peer) const { return static_cast<T*>(ncclGetLsaPointer(window, offset, peer)); }
  NCCL_DEVICE_INLINE T* peerPtr(int peer) const { return static_cast<T*>(ncclGetPeerPointer(window, offset, peer)); }
  NCCL_DEVICE_INLINE T* peerPtr(ncclTeam team, int peer) const {
    return static_cast<T*>(ncclGetPeerPointer(window, offset, team, peer));
  }
  NCCL_DEVICE_INLINE T* multimemPtr(ncclMultimemHandle mm) const {
    return static_cast<T*>(ncclGetMultimemPointer(window, offset, mm));
  }
  NCCL_DEVICE_INLINE T* lsaMultimemPtr(ncclDevComm const& comm) const {
    return static_cast<T*>(ncclGetLsaMultimemPointer(window, offset, comm));
  }
#endif
};

template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator+(ncclSymPtr<T> p, Int d) {
  return p += d;
}
template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator-(ncclSymPtr<T> p, Int d) {
  return p -= d;
}
/* Elements between two positions of the same window. */
template <typename T>
NCCL_HOST_DEVICE_INLINE ptrdiff_t operator-(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return (static_cast<ptrdiff_t>(a.offset) - static_cast<ptrdiff_t>(b.offset)) / static_cast<ptrdiff_t>(sizeof(T));
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator==(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return a.window == b.window && a.offset == b.offset;
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator!=(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return !(a == b);
}

#if defined(__CUDACC__)
/* A device communicator's resource buffer as a symmetric pointer into its resource window. */
NCCL_DEVICE_INLINE ncclSymPtr<char> ncclGetResourceBuffer(ncclDevComm const& comm, ncclDevResourceHandle h) {
  return ncclSymPtr<char>(comm.resourceWindow, ncclGetResourceBufferOffset(h));
}
#endif
#endif /* __cplusplus */

#endif /* NCCL_DEVICE_PTR_H_ */
