// Host fp16 sums through the x86 F16C instructions (host_f16c.cc), for HostPrims' reduce loop. Only on
// x86-64 GCC builds; elsewhere BRAID_HOST_F16C is 0 and the portable loop runs.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BRAID_HOST_F16C 1
#else
#define BRAID_HOST_F16C 0
#endif

namespace braid {

#if BRAID_HOST_F16C
// Whether this CPU has AVX2 and F16C (checked once).
bool hostHasF16c();
// d0[i] (and d1[i] when d1 is not null) = a[i] + b[i] on fp16 bit patterns, with exactly the bits of
// FuncSum<Half> (float add, round to nearest even, canonical NaN). Needs hostHasF16c().
void hostSumHalfF16c(const uint16_t* a, const uint16_t* b, uint16_t* d0, uint16_t* d1, size_t n);
#endif

}  // namespace braid
