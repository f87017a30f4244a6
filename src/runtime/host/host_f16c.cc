// Host fp16 sums with the x86 F16C conversions (vcvtph2ps / vcvtps2ph), picked at run time where the CPU
// has them: the portable select-based conversions made host fp16 all-reduce 3-5x slower than float.
#include "runtime/host/host_f16c.h"

#if BRAID_HOST_F16C
#include <immintrin.h>

#include "algo/numeric_types.h"
#include "algo/reduce_ops.h"

namespace braid {

bool hostHasF16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}

// Eight lanes at a time: widen exactly, add in float, round to nearest even, and give NaN lanes the
// canonical 0x7fff of floatToHalfBits (vcvtps2ph keeps a NaN's sign and payload); the tail goes through
// the portable conversions, so every element has the bits of the per-element path.
__attribute__((target("avx2,f16c"))) void hostSumHalfF16c(const uint16_t* a, const uint16_t* b, uint16_t* d0,
                                                          uint16_t* d1, size_t n) {
  const __m128i canonical = _mm_set1_epi16(0x7fff);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m256 s = _mm256_add_ps(x, y);
    __m128i h = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(s, s, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    h = _mm_blendv_epi8(h, canonical, nan16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + i), h);
    if (d1) _mm_storeu_si128(reinterpret_cast<__m128i*>(d1 + i), h);
  }
  for (; i < n; ++i) {
    const uint16_t v = FuncSum<Half>()(Half::fromBits(a[i]), Half::fromBits(b[i])).bits;
    d0[i] = v;
    if (d1) d1[i] = v;
  }
}

}  // namespace braid
#endif
