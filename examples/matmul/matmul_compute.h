// matmul_demo: where the matrices live and who multiplies them. HostCompute keeps buffers in host memory and
// runs the cache-blocked CPU kernel; GpuCompute (built when the CUDA toolkit with cuBLAS is found) keeps them
// in device memory and multiplies with cublasGemmEx on its own stream. Failures throw std::runtime_error with
// the CUDA/cuBLAS message; the demo turns that into a clean exit of the whole job.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "matmul_types.h"

namespace matmul {

class Compute {
 public:
  virtual ~Compute() = default;
  virtual bool onDevice() const = 0;
  virtual std::string describe() const = 0;
  virtual void* alloc(size_t bytes) = 0;  // never null (throws); zero bytes gives a valid unique pointer
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* hostSrc, size_t bytes) = 0;
  virtual void download(void* hostDst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // within this memory
  virtual void zero(void* p, size_t bytes) = 0;
  // C[m x n] (stride ldc elements) = A[m x k] (lda) x B[k x n] (ldb), row-major, float accumulation.
  virtual void gemm(ElemType t, const void* a, size_t lda, const void* b, size_t ldb, void* c, size_t ldc, size_t m,
                    size_t n, size_t k) = 0;
  virtual void sync() = 0;     // everything issued so far has finished
  virtual void* stream() = 0;  // the cudaStream_t to give NCCL (nullptr on host)
};

std::unique_ptr<Compute> makeHostCompute();

// How many GPUs the CUDA runtime sees (0 when there is no driver or the build has no CUDA support).
int gpuCount();
bool gpuSupportBuilt();
// The GPU backend on device `device`; throws when the build has no CUDA/cuBLAS support.
std::unique_ptr<Compute> makeGpuCompute(int device);

// A buffer of a Compute's memory, released with it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Compute* c, size_t bytes) : compute_(c), ptr_(c->alloc(bytes)), bytes_(bytes) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : compute_(o.compute_), ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      compute_ = o.compute_;
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() {
    if (ptr_) compute_->release(ptr_);
    ptr_ = nullptr;
  }
  void* get() const { return ptr_; }
  char* bytes() const { return static_cast<char*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  Compute* compute_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace matmul
