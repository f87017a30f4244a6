// matmul_demo: the host backend (plain host memory, the cache-blocked CPU kernel of host_gemm.h).
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "host_gemm.h"
#include "matmul_compute.h"

namespace matmul {
namespace {

class HostCompute : public Compute {
 public:
  bool onDevice() const override { return false; }
  std::string describe() const override { return "host (cache-blocked CPU kernel, float accumulation)"; }
  void* alloc(size_t bytes) override {
    // 64-byte aligned so the packed kernel's loads stay within cache lines; at least one line so that an
    // empty block still has a unique address.
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
  }
  void zero(void* p, size_t bytes) override {
    if (bytes) std::memset(p, 0, bytes);
  }
  void gemm(ElemType t, const void* a, size_t lda, const void* b, size_t ldb, void* c, size_t ldc, size_t m, size_t n,
            size_t k) override {
    switch (t) {
      case ElemType::kFloat:
        hostGemm(static_cast<const float*>(a), lda, static_cast<const float*>(b), ldb, static_cast<float*>(c), ldc, m,
                 n, k);
        break;
      case ElemType::kHalf:
        hostGemm(static_cast<const Half*>(a), lda, static_cast<const Half*>(b), ldb, static_cast<Half*>(c), ldc, m, n,
                 k);
        break;
      case ElemType::kBf16:
        hostGemm(static_cast<const Bf16*>(a), lda, static_cast<const Bf16*>(b), ldb, static_cast<Bf16*>(c), ldc, m, n,
                 k);
        break;
    }
  }
  void sync() override {}
  void* stream() override { return nullptr; }
};

}  // namespace

std::unique_ptr<Compute> makeHostCompute() { return std::make_unique<HostCompute>(); }

}  // namespace matmul
