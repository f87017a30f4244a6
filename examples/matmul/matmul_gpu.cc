// matmul_demo: the GPU backend: device memory from cudaMalloc, one non-blocking stream for copies, GEMMs and
// the NCCL calls, and cublasGemmEx (float accumulation, tensor cores where the type allows). Row-major
// C = A x B is computed as column-major C^T = B^T x A^T, so no transposes are needed. Without cuBLAS in the
// build every entry point reports that instead.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "matmul_compute.h"

#ifdef BRAID_MATMUL_HAVE_CUBLAS
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace matmul {

#ifdef BRAID_MATMUL_HAVE_CUBLAS
namespace {

void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

void cublasCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(s)));
}

cudaDataType cudaType(ElemType t) {
  switch (t) {
    case ElemType::kFloat:
      return CUDA_R_32F;
    case ElemType::kHalf:
      return CUDA_R_16F;
    case ElemType::kBf16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

int checkedInt(size_t v, const char* what) {
  if (v > static_cast<size_t>(INT32_MAX)) throw std::runtime_error(std::string(what) + " is too large for cuBLAS");
  return static_cast<int>(v);
}

class GpuCompute : public Compute {
 public:
  explicit GpuCompute(int device) : device_(device) {
    cudaCheck(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    name_ = prop.name;
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cublasCheck(cublasCreate(&handle_), "cublasCreate");
    cublasCheck(cublasSetStream(handle_, stream_), "cublasSetStream");
  }
  ~GpuCompute() override {
    if (handle_) cublasDestroy(handle_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  bool onDevice() const override { return true; }
  std::string describe() const override {
    return "GPU " + std::to_string(device_) + " (" + name_ + ", cublasGemmEx, float accumulation)";
  }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 256), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (to device)");
    sync();  // the host source may be reused at once
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (to host)");
    sync();
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (!bytes || dst == src) return;
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (on device)");
  }
  void zero(void* p, size_t bytes) override {
    if (bytes) cudaCheck(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");
  }
  void gemm(ElemType t, const void* a, size_t lda, const void* b, size_t ldb, void* c, size_t ldc, size_t m, size_t n,
            size_t k) override {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // cuBLAS would leave C as beta * C; the contract is zeros
      for (size_t i = 0; i < m; ++i) zero(static_cast<char*>(c) + i * ldc * typeSize(t), n * typeSize(t));
      return;
    }
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType dt = cudaType(t);
    // Column-major view: C^T (n x m, ld ldc) = B^T (n x k, ld ldb) x A^T (k x m, ld lda).
    cublasCheck(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, checkedInt(n, "n"), checkedInt(m, "m"),
                             checkedInt(k, "k"), &alpha, b, dt, checkedInt(ldb, "ldb"), a, dt, checkedInt(lda, "lda"),
                             &beta, c, dt, checkedInt(ldc, "ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
  }
  void sync() override { cudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* stream() override { return stream_; }

 private:
  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

int gpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}
bool gpuSupportBuilt() { return true; }
std::unique_ptr<Compute> makeGpuCompute(int device) { return std::make_unique<GpuCompute>(device); }

#else  // !BRAID_MATMUL_HAVE_CUBLAS

int gpuCount() { return 0; }
bool gpuSupportBuilt() { return false; }
std::unique_ptr<Compute> makeGpuCompute(int) {
  throw std::runtime_error("this build of matmul_demo has no GPU support (CUDA toolkit with cuBLAS not found)");
}

#endif

}  // namespace matmul
