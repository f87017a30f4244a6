// Tests of the distributed matrix-multiply demo (examples/matmul) as a black box: 1 to 4 ranks under
// braidrun on host communicators, both modes, every type, sizes that do not divide evenly and ones with fewer
// rows (or K columns) than ranks, a non-zero root; a corrupted rank result must fail verification; bad
// arguments; and mpirun when the build has MPI. BRAIDRUN and BRAID_BIN_DIR (set by ctest) locate the
// binaries (falling back to this test's folder); without the binaries the tests skip.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../../examples/matmul/matmul_types.h"

namespace {

struct Result {
  int exitCode = -1;
  std::string output;  // stdout and stderr together
};

std::string dirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// BRAID_BIN_DIR, else BRAIDRUN's folder, else this test's own folder (tests and tools share build/bin): the
// ctest environment does not always reach parameterised tests.
std::string binDir() {
  const char* d = std::getenv("BRAID_BIN_DIR");
  if (d && *d) return d;
  const char* b = std::getenv("BRAIDRUN");
  if (b && *b) return dirName(b);
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  self[n] = 0;
  return dirName(self);
}

std::string braidrun() {
  const char* b = std::getenv("BRAIDRUN");
  return (b && *b) ? b : binDir() + "/braidrun";
}

std::string demo() { return binDir() + "/matmul_demo"; }

bool haveBinaries() { return ::access(braidrun().c_str(), X_OK) == 0 && ::access(demo().c_str(), X_OK) == 0; }

#define SKIP_WITHOUT_BINARIES()                                                            \
  do {                                                                                     \
    if (!haveBinaries()) GTEST_SKIP() << "braidrun or matmul_demo not found (build them)"; \
  } while (0)

// Runs argv with extra environment, collecting stdout+stderr.
Result run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {}) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    // Host buffers, whatever the machine has; no inherited test hook.
    ::setenv("BRAID_HOST_COMM", "1", 1);
    ::unsetenv("BRAID_MATMUL_CORRUPT");
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(fds[1]);
  Result r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) != 0) {
    if (n > 0) r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// braidrun -n ranks -- matmul_demo args..., bounded so a hang fails instead of stalling the suite.
Result runDemo(int ranks, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv = {braidrun(), "-n", std::to_string(ranks), "--timeout", "60", "--", demo()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env);
}

std::vector<std::string> sizeArgs(size_t m, size_t n, size_t k) {
  return {"--m", std::to_string(m), "--n", std::to_string(n), "--k", std::to_string(k), "--iters",
          "1",   "--warmup",        "0"};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void expectVerified(const Result& r) {
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("verified: all "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("MISMATCH"), std::string::npos) << r.output;
}

void expectNotVerified(const Result& r) {
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_EQ(r.output.find("verified"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MISMATCH: C["), std::string::npos) << r.output;
}

// ---- every rank count x mode x type on 1001 x 517 x 263 (nothing divides evenly) ----------------------------

using Combo = std::tuple<int, std::string, std::string>;

class MatmulDemoAll : public testing::TestWithParam<Combo> {};

TEST_P(MatmulDemoAll, VerifiesUnevenSizes) {
  SKIP_WITHOUT_BINARIES();
  const auto& [ranks, mode, type] = GetParam();
  Result r = runDemo(ranks, concat(sizeArgs(1001, 517, 263), {"--mode", mode, "--type", type}));
  expectVerified(r);
  EXPECT_NE(r.output.find(std::to_string(ranks) + " rank(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(type + ", " + mode + " mode"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("speedup"), std::string::npos) << r.output;
  if (mode == "rows") {
    // Every row block is computed by the same kernel as the reference and moved bit for bit: no error at all.
    EXPECT_NE(r.output.find("max |error| 0,"), std::string::npos) << r.output;
    for (const char* phase : {"scatter A", "broadcast B", "multiply", "gather C"})
      EXPECT_NE(r.output.find(phase), std::string::npos) << phase;
  } else {
    for (const char* phase : {"scatter A,B panels", "multiply (partial C)", "all-reduce C"})
      EXPECT_NE(r.output.find(phase), std::string::npos) << phase;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksModesTypes, MatmulDemoAll,
                         testing::Combine(testing::Values(1, 2, 3, 4), testing::Values("rows", "inner"),
                                          testing::Values("float", "half", "bf16")),
                         [](const testing::TestParamInfo<Combo>& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" + std::get<1>(info.param) + "_" +
                                  std::get<2>(info.param);
                         });

// ---- small and degenerate shapes ------------------------------------------------------------------------------

TEST(MatmulDemo, FewerRowsThanRanks) {
  SKIP_WITHOUT_BINARIES();
  // The root (rank 3) gets no rows itself: it only scatters and gathers.
  Result r = runDemo(4, concat(sizeArgs(3, 5, 7), {"--mode", "rows", "--type", "half", "--root", "3"}));
  expectVerified(r);
  EXPECT_NE(r.output.find("per rank: 1 1 1 0 "), std::string::npos) << r.output;
}

TEST(MatmulDemo, FewerInnerColumnsThanRanks) {
  SKIP_WITHOUT_BINARIES();
  // The root (rank 3) gets no K columns: its partial C is zeros.
  Result r = runDemo(4, concat(sizeArgs(9, 4, 3), {"--mode", "inner", "--type", "bf16", "--root", "3"}));
  expectVerified(r);
  EXPECT_NE(r.output.find("per rank: 1 1 1 0 "), std::string::npos) << r.output;
}

TEST(MatmulDemo, OneByOneByOne) {
  SKIP_WITHOUT_BINARIES();
  expectVerified(runDemo(3, concat(sizeArgs(1, 1, 1), {"--mode", "rows"})));
  expectVerified(runDemo(3, concat(sizeArgs(1, 1, 1), {"--mode", "inner", "--type", "half"})));
}

TEST(MatmulDemo, NonZeroRootAndRepeatedIterations) {
  SKIP_WITHOUT_BINARIES();
  Result r = runDemo(3, {"--m", "37", "--n", "29", "--k", "23", "--root", "2", "--iters", "2", "--warmup", "1"});
  expectVerified(r);
  EXPECT_NE(r.output.find("root 2"), std::string::npos) << r.output;
  expectVerified(runDemo(4, {"--m", "50", "--n", "17", "--k", "41", "--mode", "inner", "--type", "bf16", "--root", "3",
                             "--iters", "2", "--warmup", "1"}));
}

// ---- verification must catch a wrong result ----------------------------------------------------------------

TEST(MatmulDemo, CorruptedRowBlockFails) {
  SKIP_WITHOUT_BINARIES();
  const size_t m = 1001, n = 517, k = 263;
  Result r = runDemo(3, concat(sizeArgs(m, n, k), {"--mode", "rows"}), {{"BRAID_MATMUL_CORRUPT", "1"}});
  expectNotVerified(r);
  // Rank 1 corrupts the middle element of its row block; the report names exactly that element of C.
  const matmul::Range rows = matmul::splitRange(m, 3, 1);
  const size_t idx = rows.begin * n + rows.count * n / 2;
  EXPECT_NE(r.output.find("(element " + std::to_string(idx) + ")"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 of " + std::to_string(m * n) + " elements differ"), std::string::npos) << r.output;
}

TEST(MatmulDemo, CorruptedRootBlockFails) {
  SKIP_WITHOUT_BINARIES();
  expectNotVerified(runDemo(2, concat(sizeArgs(101, 51, 27), {"--mode", "rows", "--type", "half", "--root", "1"}),
                            {{"BRAID_MATMUL_CORRUPT", "1"}}));
}

TEST(MatmulDemo, CorruptedPartialSumFails) {
  SKIP_WITHOUT_BINARIES();
  Result r =
      runDemo(4, concat(sizeArgs(61, 43, 29), {"--mode", "inner", "--type", "bf16"}), {{"BRAID_MATMUL_CORRUPT", "2"}});
  expectNotVerified(r);
  EXPECT_NE(r.output.find("(element " + std::to_string(61 * 43 / 2) + ")"), std::string::npos) << r.output;
}

TEST(MatmulDemo, SingleRankCorruptionFails) {
  SKIP_WITHOUT_BINARIES();
  expectNotVerified(runDemo(1, concat(sizeArgs(20, 20, 20), {"--type", "float"}), {{"BRAID_MATMUL_CORRUPT", "0"}}));
}

// ---- command line -------------------------------------------------------------------------------------------

TEST(MatmulDemo, BadArgumentsExitTwo) {
  SKIP_WITHOUT_BINARIES();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--type", "int8"}, {"--mode", "cols"}, {"--m", "0"}, {"--iters", "0"}, {"--bogus", "1"}, {"--k"},
           // each dimension is in range, but A (m x k) is not addressable: it crashed before
           {"--m", "2147483648", "--k", "2147483648", "--n", "1"}}) {
    Result r = run(concat({demo()}, args));
    EXPECT_EQ(r.exitCode, 2) << args[0] << "\n" << r.output;
    EXPECT_NE(r.output.find("usage:"), std::string::npos) << r.output;
  }
  Result r = runDemo(2, {"--root", "2"});  // a root outside the job
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--root 2 is not a rank"), std::string::npos) << r.output;
}

TEST(MatmulDemo, HelpRunsWithoutALauncher) {
  SKIP_WITHOUT_BINARIES();
  Result r = run({demo(), "--help"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("--mode rows|inner"), std::string::npos) << r.output;
}

TEST(MatmulDemo, SingleProcessWithoutALauncher) {
  SKIP_WITHOUT_BINARIES();
  Result r = run(concat({demo()}, sizeArgs(64, 48, 32)));
  expectVerified(r);
  EXPECT_NE(r.output.find("single process"), std::string::npos) << r.output;
}

// ---- mpirun, when the build has MPI -------------------------------------------------------------------------

TEST(MatmulDemo, RunsUnderMpirun) {
  SKIP_WITHOUT_BINARIES();
  Result help = run({demo(), "--help"});
  if (help.output.find("MPI support yes") == std::string::npos) GTEST_SKIP() << "built without MPI";
  if (run({"sh", "-c", "command -v mpirun"}).exitCode != 0) GTEST_SKIP() << "no mpirun on PATH";
  std::vector<std::string> argv = {"timeout",         "60",  "mpirun", "--allow-run-as-root",
                                   "--oversubscribe", "-np", "3",      demo()};
  Result r = run(concat(argv, concat(sizeArgs(1001, 517, 263), {"--mode", "inner", "--type", "half"})),
                 {{"OMPI_MCA_rmaps_base_oversubscribe", "1"}});
  expectVerified(r);
  EXPECT_NE(r.output.find("3 rank(s) (mpirun)"), std::string::npos) << r.output;
}

}  // namespace
