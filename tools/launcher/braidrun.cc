// braidrun: the local job launcher. `braidrun -n N [-p] [--timeout SEC] [--] program args...` runs N ranks
// of a program on this host with the environment a Braid (or NCCL) job needs. Does not link libbraid.
#include <cstdio>
#include <string>

#include "launch_options.h"
#include "launcher.h"

int main(int argc, char** argv) {
  braid::LaunchOptions opts;
  std::string error;
  switch (braid::parseLaunchOptions(argc, argv, &opts, &error)) {
    case braid::ParseOutcome::kHelp:
      std::fputs(braid::launchUsage(), stdout);
      return 0;
    case braid::ParseOutcome::kError:
      std::fprintf(stderr, "braidrun: %s\n%s", error.c_str(), braid::launchUsage());
      return 2;
    case braid::ParseOutcome::kRun:
      break;
  }
  braid::Launcher launcher(std::move(opts));
  return launcher.run();
}
