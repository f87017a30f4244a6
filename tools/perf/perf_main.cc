// perfMain: command line, header, threads, footer, JSON and exit status of a perf tool.
#include "perf_main.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "perf_runtime.h"

namespace braid {
namespace perf {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// -T: ends the job when no operation has completed for that long (host communicators cannot be polled).
void startWatchdog(Process* p) {
  if (p->args.timeoutSec <= 0) return;
  noteProgress(*p);
  std::thread([p]() {
    const int64_t limit = static_cast<int64_t>(p->args.timeoutSec) * 1000000000ll;
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (nowNs() - p->lastProgressNs.load() > limit) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: %s: Test timeout (%ds): no operation completed for %d s\n", p->tool.c_str(),
                     p->info.hostname.c_str(), p->args.timeoutSec, p->args.timeoutSec);
        std::fflush(stderr);
        std::_Exit(124);
      }
    }
  }).detach();
}

void printHeader(const Process& p) {
  const PerfArgs& a = p.args;
  std::printf("# Collective test starting: %s\n", p.tool.c_str());
  std::printf("# Library: %s %s (%s)\n", p.info.library.c_str(), p.info.libraryVersion.c_str(),
              p.info.libraryPath.c_str());
  std::printf("# %s\n", paramsLine(a).c_str());
  std::printf("# Launcher: %s, %d process%s x %d thread%s x %d rank%s each = %d ranks\n", p.info.launcher.c_str(),
              p.nProcs, p.nProcs == 1 ? "" : "es", a.nThreads, a.nThreads == 1 ? "" : "s", a.nGpus,
              a.nGpus == 1 ? "" : "s", p.nranks);
  if (p.hostBuffers) {
    std::printf("# Using host buffers (%s): host communicators, stream argument ignored\n", p.hostReason.c_str());
    if (p.graphIgnored) std::printf("# -G (CUDA graphs) needs device buffers: ignored\n");
  }
  if (a.blocking) std::printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  if (a.parallelInit) std::printf("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
  if (p.corrupt) std::printf("# BRAID_PERF_CORRUPT=1: one output element is damaged before each check\n");
  std::printf("#\n");
  std::fflush(stdout);
}

}  // namespace

int perfMain(int argc, char** argv, Coll coll) {
  setlinebuf(stdout);
  Process* p = new Process();  // lives until exit: detached watchdog reads it
  p->coll = coll;
  p->tool = collInfo(coll).toolName;
  for (int i = 0; i < argc; ++i) p->info.commandLine.push_back(argv[i]);

  std::string error;
  switch (parsePerfArgs(argc, argv, &p->args, &error)) {
    case ParseOutcome::kHelp:
      std::printf("%s", perfUsage(argv[0]).c_str());
      return 0;
    case ParseOutcome::kError:
      std::fprintf(stderr, "%s: %s\n", p->tool.c_str(), error.c_str());
      return 2;
    case ParseOutcome::kRun:
      break;
  }

  setupProcess(p);
  const PerfArgs& a = p->args;
  if (collInfo(coll).hasRoot && a.root >= p->nranks) {
    std::fprintf(stderr, "%s: root %d is out of range for %d ranks\n", p->tool.c_str(), a.root, p->nranks);
    finalizeLaunch(p);
    return 2;
  }
  if (p->proc == 0) printHeader(*p);
  startWatchdog(p);

  allocateBuffers(p);
  noteProgress(*p);  // -T counts stalls, not setup work
  if (!a.parallelInit) initComms(p, -1);
  noteProgress(*p);

  std::vector<ThreadResult> results(a.nThreads);
  std::vector<std::thread> threads;
  for (int t = 1; t < a.nThreads; ++t) threads.emplace_back(runThread, p, t, &results[t]);
  runThread(p, 0, &results[0]);
  for (auto& t : threads) t.join();

  const ThreadResult& r = results[0];
  const double avgBw = r.busBwCount ? r.busBwSum / r.busBwCount : 0.0;
  teardown(p);
  finalizeLaunch(p);
  bool bwFailed = p->minBw > 0 && avgBw < p->minBw * 0.9;
  return (r.outOfBounds || bwFailed) ? 1 : 0;
}

}  // namespace perf
}  // namespace braid
