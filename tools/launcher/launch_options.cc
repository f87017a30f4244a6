// braidrun's command line parsing (see launch_options.h).
#include "launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace braid {
namespace {

// A rank count beyond this is almost surely a typo, and each rank costs a process and two pipes.
constexpr long kMaxRanks = 4096;

bool parseRanks(const char* s, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < 1 || v > kMaxRanks) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseSeconds(const char* s, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  // At most a year: a larger value would overflow the steady clock's nanoseconds and fire at once.
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 365.0 * 86400) return false;
  *out = v;
  return true;
}

}  // namespace

const char* launchUsage() {
  return "usage: braidrun -n N [-p|--prefix] [--timeout SEC] [--bind core|none] [--nodes K [--netns]] [--]\n"
         "                program [args...]\n"
         "\n"
         "Starts N local processes of `program`, each with BRAID_RANK, BRAID_NRANKS, BRAID_LOCAL_RANK,\n"
         "BRAID_LOCAL_NRANKS, a fresh NCCL_COMM_ID=127.0.0.1:<port> and BRAID_JOB_SECRET set.\n"
         "\n"
         "  -n N, --nranks N   number of ranks (1..4096)\n"
         "  -p, --prefix       prefix every output line of rank r with \"[r] \"\n"
         "  --timeout SEC      kill all ranks after SEC seconds and exit 124\n"
         "  --bind core|none   core (default, N > 1): rank r gets the r-th of N equal slices of the usable CPUs\n"
         "  --nodes K          run the ranks as K nodes of this machine (1..N): rank r is on node r*K/N, gets\n"
         "                     NCCL_HOSTID=braidrun-node<k> and BRAID_LOCAL_RANK/BRAID_LOCAL_NRANKS within its\n"
         "                     node; ranks of a node use shared memory, nodes talk over sockets\n"
         "  --netns            with --nodes, as root: give each node its own network and UTS namespace instead\n"
         "                     (host name braid-node<k>, address 10.91.0.<k+1>/24 on a private bridge; needs\n"
         "                     iproute2 and util-linux), removed when the job ends; NCCL_COMM_ID is then node\n"
         "                     0's address\n"
         "  -h, --help         this text\n"
         "\n"
         "As soon as one rank exits non-zero or dies by a signal, the others are killed (SIGTERM, then SIGKILL\n"
         "after 2 s) and braidrun exits with that rank's status (128+signal if it was killed).\n"
         "SIGINT and SIGTERM are forwarded to the ranks.\n";
}

ParseOutcome parseLaunchOptions(int argc, char** argv, LaunchOptions* opts, std::string* error) {
  *opts = LaunchOptions();
  int i = 1;
  // Fetches the value of a flag given as "--flag VALUE" or "--flag=VALUE" (or "-nVALUE" for short ones).
  auto takeValue = [&](const char* arg, const char* inlineValue, const char** value) -> bool {
    if (inlineValue) {
      *value = inlineValue;
      return true;
    }
    if (i + 1 >= argc) {
      *error = std::string("missing value after ") + arg;
      return false;
    }
    *value = argv[++i];
    return true;
  };
  for (; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--") == 0) {
      ++i;
      break;
    }
    if (arg[0] != '-' || arg[1] == '\0') break;  // the program starts here
    std::string name = arg;
    const char* inlineValue = nullptr;
    if (name.rfind("--", 0) == 0) {
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        inlineValue = arg + eq + 1;
        name.resize(eq);
      }
    } else if (name.size() > 2 && name[1] == 'n' && name != "-np") {  // -n4 (mpirun's -np also works)
      inlineValue = arg + 2;
      name = "-n";
    }
    const char* value = nullptr;
    if (name == "-h" || name == "--help") {
      return ParseOutcome::kHelp;
    } else if (name == "-p" || name == "--prefix") {
      if (inlineValue) {
        *error = "--prefix takes no value";
        return ParseOutcome::kError;
      }
      opts->prefix = true;
    } else if (name == "-n" || name == "--nranks" || name == "-np") {
      if (!takeValue(arg, inlineValue, &value)) return ParseOutcome::kError;
      if (!parseRanks(value, &opts->nranks)) {
        *error = std::string("bad rank count '") + value + "' (want an integer from 1 to 4096)";
        return ParseOutcome::kError;
      }
    } else if (name == "--bind") {
      if (!takeValue(arg, inlineValue, &value)) return ParseOutcome::kError;
      if (std::string(value) == "core") {
        opts->bindCores = true;
      } else if (std::string(value) == "none") {
        opts->bindCores = false;
      } else {
        *error = std::string("bad --bind '") + value + "' (want core or none)";
        return ParseOutcome::kError;
      }
    } else if (name == "--nodes") {
      if (!takeValue(arg, inlineValue, &value)) return ParseOutcome::kError;
      if (!parseRanks(value, &opts->nodes)) {
        *error = std::string("bad node count '") + value + "' (want an integer from 1 to 4096)";
        return ParseOutcome::kError;
      }
    } else if (name == "--netns") {
      if (inlineValue) {
        *error = "--netns takes no value";
        return ParseOutcome::kError;
      }
      opts->netns = true;
    } else if (name == "--timeout" || name == "-t") {
      if (!takeValue(arg, inlineValue, &value)) return ParseOutcome::kError;
      if (!parseSeconds(value, &opts->timeoutSec)) {
        *error = std::string("bad timeout '") + value + "' (want seconds > 0, at most a year)";
        return ParseOutcome::kError;
      }
    } else {
      *error = std::string("unknown option '") + arg + "'";
      return ParseOutcome::kError;
    }
  }
  for (; i < argc; ++i) opts->program.emplace_back(argv[i]);
  if (opts->nranks == 0) {
    *error = "-n N is required";
    return ParseOutcome::kError;
  }
  if (opts->nodes > opts->nranks) {
    *error = "--nodes " + std::to_string(opts->nodes) + " needs at least as many ranks (-n " +
             std::to_string(opts->nranks) + ")";
    return ParseOutcome::kError;
  }
  if (opts->netns && opts->nodes == 0) {
    *error = "--netns needs --nodes K";
    return ParseOutcome::kError;
  }
  if (opts->program.empty()) {
    *error = "no program given";
    return ParseOutcome::kError;
  }
  return ParseOutcome::kRun;
}

}  // namespace braid
