// The slot a FIFO step uses (conn_info.h: step % nSteps), written once for the kernels and their CPU test. Every
// transport makes FIFOs of 8 steps (kHostFifoSteps) and accepts up to 256: a power of two takes a mask, where the
// kernels' 64-bit remainder is a long division (a few hundred cycles) on the latency path of each step of each
// connection; any other count takes the remainder.
#pragma once

#include <cstdint>

#include "algo/numeric_types.h"  // BRAID_HD

namespace braid {

BRAID_HD inline uint32_t fifoSlot(uint64_t step, uint32_t nSteps) {
  return (nSteps & (nSteps - 1)) == 0 ? static_cast<uint32_t>(step) & (nSteps - 1)
                                      : static_cast<uint32_t>(step % nSteps);
}

}  // namespace braid
