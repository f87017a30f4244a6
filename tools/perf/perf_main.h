// Entry point shared by the perf tools: each *_perf binary's main() calls perfMain with its collective.
#pragma once

#include "perf_coll.h"

namespace braid {
namespace perf {

// Runs the tool; returns the process exit status (0 ok, 1 wrong results or bandwidth below
// NCCL_TESTS_MIN_BW, 2 bad command line; runtime failures exit 3 from wherever they happen).
int perfMain(int argc, char** argv, Coll coll);

}  // namespace perf
}  // namespace braid
