// alltoall_perf: nccl-tests-compatible benchmark of AlltoAll (see perf_main.h).
#include "perf_main.h"

int main(int argc, char** argv) { return braid::perf::perfMain(argc, argv, braid::perf::Coll::AlltoAll); }
