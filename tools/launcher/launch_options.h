// braidrun's command line: what it accepts and the usage text. Kept apart from the process supervision so
// the parsing rules (flags end at the first non-flag word or "--") read in one place.
#pragma once

#include <string>
#include <vector>

namespace braid {

struct LaunchOptions {
  int nranks = 0;
  bool prefix = false;               // "[r] " before each output line of rank r
  double timeoutSec = 0;             // 0: no timeout
  // --bind core (default) pins rank r to the r-th CPU braidrun may use, when there are at least N of them
  // (what mpirun does for small jobs: two spinning ranks sharing one core lose most of their speed);
  // --bind none leaves placement to the kernel.
  bool bindCores = true;
  // --nodes K splits the ranks over K simulated nodes of this machine in contiguous blocks (rank r on node
  // r*K/N): each node gets its own NCCL_HOSTID, so ranks of one node use SHM and nodes talk over sockets.
  int nodes = 0;  // 0: one host
  // --netns (root only, with --nodes): each node also gets a network and UTS namespace of its own (host
  // name braid-node<k>, address 10.91.0.<k+1> on a bridge) instead of NCCL_HOSTID.
  bool netns = false;
  std::vector<std::string> program;  // argv of every rank
};

enum class ParseOutcome { kRun, kHelp, kError };

// Parses argv into `opts`. On kError, `error` says why (the caller prints it with the usage, exit 2).
ParseOutcome parseLaunchOptions(int argc, char** argv, LaunchOptions* opts, std::string* error);

const char* launchUsage();

}  // namespace braid
