// matmul_demo: the local multiply on host buffers, C = A x B for row-major float/half/bf16 matrices,
// accumulating in float. Cache-blocked: a panel of B (all of K x kNc columns) is converted to float once per
// column block, a kMc x kKc block of A per step, and a 6 x 16 register tile of C accumulates over K. Every
// element of C sums its K products in increasing k, whatever the blocking and however the rows are split, so
// a row block computed on one rank is bit-identical to the same rows of a single-rank result.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "matmul_types.h"

namespace matmul {

namespace detail {

constexpr size_t kMr = 6;    // rows of the register tile
constexpr size_t kNr = 16;   // columns of the register tile: one 16-float vector
constexpr size_t kMc = 72;   // rows of A per block (multiple of kMr)
constexpr size_t kKc = 256;  // depth of one A block (B panel rows used per step)
constexpr size_t kNc = 512;  // columns per B panel (multiple of kNr)

inline size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

// 16 floats as one GCC/Clang vector: one AVX-512 register, two AVX ones or four SSE ones, whichever the
// clone below is built for. Writing the tile with it keeps the compiler from reshuffling it across rows.
typedef float Vec16 __attribute__((vector_size(64)));

// c[kMr x kNr] += Ap[kMr x kc] * Bp[kc x kNr]; Ap rows are kc apart, Bp and c rows ldb and ldc apart.
inline __attribute__((always_inline)) void microKernel(const float* __restrict ap, size_t kc,
                                                       const float* __restrict bp, size_t ldb, float* __restrict c,
                                                       size_t ldc) {
  Vec16 acc[kMr];
  for (size_t r = 0; r < kMr; ++r) std::memcpy(&acc[r], c + r * ldc, sizeof(Vec16));
  for (size_t p = 0; p < kc; ++p) {
    Vec16 b;
    std::memcpy(&b, bp + p * ldb, sizeof(Vec16));
    for (size_t r = 0; r < kMr; ++r) acc[r] += ap[r * kc + p] * b;
  }
  for (size_t r = 0; r < kMr; ++r) std::memcpy(c + r * ldc, &acc[r], sizeof(Vec16));
}

// One packed block: cTile[mcPad x ncPad] += aBlock[mcPad x kc] x bPanel[kc x ncPad] (bPanel rows ncPad apart).
// Built for x86-64-v4 (AVX-512) and v3 (AVX2 + FMA) besides the baseline, picked at load time; every caller
// in one process gets the same clone, so a row block is still bit-identical to the single-rank result.
#ifndef BRAID_MATMUL_CLONES
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define BRAID_MATMUL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BRAID_MATMUL_CLONES
#endif
#endif
BRAID_MATMUL_CLONES static void blockKernel(const float* aBlock, size_t mcPad, size_t kc, const float* bPanel,
                                            size_t ncPad, float* cTile) {
  for (size_t ir = 0; ir < mcPad; ir += kMr)
    for (size_t jr = 0; jr < ncPad; jr += kNr)
      microKernel(&aBlock[ir * kc], kc, &bPanel[jr], ncPad, &cTile[ir * ncPad + jr], ncPad);
}

}  // namespace detail

// C[m x n] (row stride ldc) = A[m x k] (stride lda) x B[k x n] (stride ldb). k == 0 gives zeros.
template <typename T>
void hostGemm(const T* a, size_t lda, const T* b, size_t ldb, T* c, size_t ldc, size_t m, size_t n, size_t k) {
  using namespace detail;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) c[i * ldc + j] = fromFloat<T>(0.0f);
    return;
  }
  // Packed float copies; padding rows/columns of these internal buffers with zeros keeps the kernel free of
  // edge cases (the caller's matrices are never padded).
  const size_t ncMax = std::min(kNc, roundUp(n, kNr));
  std::vector<float> bPanel(k * ncMax);
  std::vector<float> aBlock(kMc * kKc);
  std::vector<float> cTile(kMc * ncMax);

  for (size_t jc = 0; jc < n; jc += kNc) {
    const size_t nc = std::min(kNc, n - jc);
    const size_t ncPad = roundUp(nc, kNr);
    for (size_t p = 0; p < k; ++p) {
      float* dst = &bPanel[p * ncPad];
      const T* src = b + p * ldb + jc;
      for (size_t j = 0; j < nc; ++j) dst[j] = toFloat(src[j]);
      for (size_t j = nc; j < ncPad; ++j) dst[j] = 0.0f;
    }
    for (size_t ic = 0; ic < m; ic += kMc) {
      const size_t mc = std::min(kMc, m - ic);
      const size_t mcPad = roundUp(mc, kMr);
      std::fill(cTile.begin(), cTile.begin() + mcPad * ncPad, 0.0f);
      for (size_t pc = 0; pc < k; pc += kKc) {
        const size_t kc = std::min(kKc, k - pc);
        for (size_t i = 0; i < mcPad; ++i) {
          float* dst = &aBlock[i * kc];
          if (i < mc) {
            const T* src = a + (ic + i) * lda + pc;
            for (size_t p = 0; p < kc; ++p) dst[p] = toFloat(src[p]);
          } else {
            std::fill(dst, dst + kc, 0.0f);
          }
        }
        blockKernel(aBlock.data(), mcPad, kc, &bPanel[pc * ncPad], ncPad, cTile.data());
      }
      for (size_t i = 0; i < mc; ++i) {
        T* dst = c + (ic + i) * ldc + jc;
        const float* src = &cTile[i * ncPad];
        for (size_t j = 0; j < nc; ++j) dst[j] = fromFloat<T>(src[j]);
      }
    }
  }
}

// Reference for tests: the plain triple loop, summing in increasing k in float (the same order as hostGemm).
template <typename T>
void naiveGemm(const T* a, const T* b, T* c, size_t m, size_t n, size_t k) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (size_t p = 0; p < k; ++p) s += toFloat(a[i * k + p]) * toFloat(b[p * n + j]);
      c[i * n + j] = fromFloat<T>(s);
    }
}

}  // namespace matmul
