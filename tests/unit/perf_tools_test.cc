// Black-box tests of the perf tools (tools/perf): every *_perf binary under braidrun with 2 and 3 ranks on
// host communicators, -c 1 and a few sizes (exit 0, #wrong 0, the table parses), the BRAID_PERF_CORRUPT=1
// hook (#wrong > 0, non-zero exit), command-line errors (exit 2), -J, -d/-o/-r all, threads and GPUs-per-
// thread in one process, mpirun and the compare script where available. ctest sets BRAID_BIN_DIR and
// BRAIDRUN; without them the tests skip.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct ProcResult {
  int status = -1;
  std::string output;
};

// BRAID_BIN_DIR, or the directory of BRAIDRUN (the perf tools are built beside braidrun).
std::string binDir() {
  const char* d = std::getenv("BRAID_BIN_DIR");
  if (d && *d) return d;
  const char* b = std::getenv("BRAIDRUN");
  if (!b || !*b) return "";
  std::string s = b;
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command line with stdout and stderr together.
ProcResult sh(const std::string& cmd) {
  ProcResult r;
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) r.output.append(buf, n);
  int st = ::pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Env (VAR=value ...) and arguments, quoted, with braidrun -n N in front when nranks > 0.
ProcResult perf(const std::string& tool, int nranks, const std::vector<std::string>& args,
                const std::string& env = "") {
  std::string cmd = "env BRAID_PERF_CORRUPT=0 " + env + " ";
  if (nranks > 0) cmd += quote(std::getenv("BRAIDRUN")) + " -n " + std::to_string(nranks) + " --timeout 60 ";
  cmd += quote(binDir() + "/" + tool);
  for (const std::string& a : args) cmd += " " + quote(a);
  return sh(cmd);
}

struct Row {
  long size = 0, count = 0;
  std::string type, redop;
  int root = 0;
  double time[2] = {0, 0}, algbw[2] = {0, 0}, busbw[2] = {0, 0};
  std::string wrong[2];
};

std::vector<Row> parseTable(const std::string& out) {
  static const std::regex kRow(
      R"(^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s*$)");
  std::vector<Row> rows;
  std::istringstream in(out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, m, kRow)) continue;
    Row r;
    r.size = std::stol(m[1]);
    r.count = std::stol(m[2]);
    r.type = m[3];
    r.redop = m[4];
    r.root = std::stoi(m[5]);
    for (int p = 0; p < 2; ++p) {
      r.time[p] = std::stod(m[6 + 4 * p]);
      r.algbw[p] = std::stod(m[7 + 4 * p]);
      r.busbw[p] = std::stod(m[8 + 4 * p]);
      r.wrong[p] = m[9 + 4 * p];
    }
    rows.push_back(r);
  }
  return rows;
}

bool skipWithoutTools() {
  if (binDir().empty() || !std::getenv("BRAIDRUN")) return true;
  return !exists(binDir() + "/all_reduce_perf");
}

#define REQUIRE_TOOLS()                                                                             \
  do {                                                                                              \
    if (skipWithoutTools()) GTEST_SKIP() << "BRAID_BIN_DIR/BRAIDRUN unset or perf tools not built"; \
  } while (0)

const char* const kTools[] = {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                              "broadcast_perf",  "reduce_perf",     "alltoall_perf",
                              "gather_perf",     "scatter_perf",    "sendrecv_perf"};

bool inPlaceUnchecked(const std::string& tool) { return tool == "alltoall_perf" || tool == "sendrecv_perf"; }

class PerfToolRun : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(PerfToolRun, ChecksCleanUnderBraidrun) {
  REQUIRE_TOOLS();
  const std::string tool = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  ProcResult r = perf(tool, n, {"-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-c", "1"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# Collective test starting: " + tool), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("host buffers"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("#       size         count      type   redop    root     time   algbw   busbw #wrong"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# Avg bus bandwidth    : "), std::string::npos) << r.output;
  std::vector<Row> rows = parseTable(r.output);
  ASSERT_EQ(rows.size(), 5u) << r.output;  // 8, 64, 512, 4K, 32K
  const bool rooted =
      tool == "broadcast_perf" || tool == "reduce_perf" || tool == "gather_perf" || tool == "scatter_perf";
  for (const Row& row : rows) {
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.root, rooted ? 0 : -1);
    EXPECT_EQ(row.wrong[0], "0") << r.output;
    EXPECT_EQ(row.wrong[1], inPlaceUnchecked(tool) ? "N/A" : "0") << r.output;
    for (int p = 0; p < 2; ++p) {
      EXPECT_GE(row.busbw[p], 0.0);
      EXPECT_GE(row.algbw[p] + 0.011, row.busbw[p] * 0.5);  // busbw = algbw * factor, factor <= 2
    }
  }
  EXPECT_GT(rows.back().time[0], 0.0);
}

INSTANTIATE_TEST_SUITE_P(AllTools, PerfToolRun,
                         ::testing::Combine(::testing::ValuesIn(kTools), ::testing::Values(2, 3)),
                         [](const ::testing::TestParamInfo<PerfToolRun::ParamType>& info) {
                           return std::string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) +
                                  "ranks";
                         });

class PerfToolCorrupt : public ::testing::TestWithParam<const char*> {};

TEST_P(PerfToolCorrupt, DamagedOutputIsCaught) {
  REQUIRE_TOOLS();
  const std::string tool = GetParam();
  ProcResult r = perf(tool, 3, {"-b", "1K", "-e", "4K", "-f", "4", "-n", "1", "-w", "0", "-c", "1", "-r", "1"},
                      "BRAID_PERF_CORRUPT=1");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.status, 2) << r.output;  // not a usage error
  std::vector<Row> rows = parseTable(r.output);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  for (const Row& row : rows) EXPECT_GT(std::atol(row.wrong[0].c_str()), 0) << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : "), std::string::npos);
  EXPECT_NE(r.output.find("FAILED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expected"), std::string::npos) << r.output;  // the first bad elements are named
}

INSTANTIATE_TEST_SUITE_P(AllTools, PerfToolCorrupt, ::testing::ValuesIn(kTools),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(PerfTools, UsageErrorsExitTwo) {
  REQUIRE_TOOLS();
  ProcResult r = perf("all_reduce_perf", 0, {"--no-such-flag"});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown option '--no-such-flag'"), std::string::npos) << r.output;
  r = perf("broadcast_perf", 0, {"-b", "1Q"});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("bad value '1Q' for -b"), std::string::npos) << r.output;
  r = perf("gather_perf", 0, {"-d", "float7"});
  EXPECT_EQ(r.status, 2) << r.output;
  r = perf("reduce_perf", 2, {"-r", "5", "-b", "8", "-e", "8"});
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("root 5 is out of range for 2 ranks"), std::string::npos) << r.output;
  r = perf("sendrecv_perf", 0, {"-h"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("USAGE: sendrecv_perf"), std::string::npos) << r.output;
}

TEST(PerfTools, JsonOutput) {
  REQUIRE_TOOLS();
  std::string path = ::testing::TempDir() + "perf_tools_test_" + std::to_string(::getpid()) + ".json";
  ProcResult r = perf("all_gather_perf", 2, {"-b", "1K", "-e", "16K", "-f", "4", "-n", "2", "-w", "0", "-J", path});
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string j = ss.str();
  std::remove(path.c_str());
  EXPECT_NE(j.find("\"collective\": \"AllGather\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"nranks\": 2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"buffers\": \"host\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"out_of_bounds\": 0"), std::string::npos) << j;
  size_t rows = 0;
  for (size_t p = j.find("\"out_of_place\""); p != std::string::npos; p = j.find("\"out_of_place\"", p + 1)) ++rows;
  EXPECT_EQ(rows, 3u) << j;  // 1K, 4K, 16K
}

TEST(PerfTools, AllTypesAllOpsAllRoots) {
  REQUIRE_TOOLS();
  ProcResult r =
      perf("all_reduce_perf", 3, {"-b", "8", "-e", "1K", "-f", "128", "-n", "1", "-w", "0", "-d", "all", "-o", "all"});
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<Row> rows = parseTable(r.output);
  EXPECT_EQ(rows.size(), 12u * 6u * 2u) << r.output;
  for (const Row& row : rows) EXPECT_EQ(row.wrong[0] + row.wrong[1], "00") << row.type << " " << row.redop;
  r = perf("reduce_perf", 3, {"-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "-d", "f8e5m2", "-o", "all", "-r", "all"});
  ASSERT_EQ(r.status, 0) << r.output;
  rows = parseTable(r.output);
  ASSERT_EQ(rows.size(), 6u * 3u) << r.output;
  EXPECT_EQ(rows[0].root, 0);
  EXPECT_EQ(rows[2].root, 2);
}

TEST(PerfTools, ThreadsAndRanksPerThreadInOneProcess) {
  REQUIRE_TOOLS();
  for (const char* mode : {"-t", "-g"}) {
    ProcResult r = perf("all_reduce_perf", 0, {mode, "2", "-b", "8", "-e", "64K", "-f", "64", "-n", "2", "-w", "1"});
    ASSERT_EQ(r.status, 0) << mode << "\n" << r.output;
    EXPECT_NE(r.output.find("= 2 ranks"), std::string::npos) << r.output;
    EXPECT_EQ(parseTable(r.output).size(), 3u) << r.output;
    EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  }
  // Two processes of 2 threads each: 4 ranks.
  ProcResult r = perf("reduce_scatter_perf", 2, {"-t", "2", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("= 4 ranks"), std::string::npos) << r.output;
}

TEST(PerfTools, UnderMpirun) {
  REQUIRE_TOOLS();
  if (!exists(binDir() + "/mpi_allreduce_bench")) GTEST_SKIP() << "built without MPI";
  if (sh("command -v mpirun").status != 0) GTEST_SKIP() << "no mpirun";
  const std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
  ProcResult r = sh("env " + env + "mpirun --allow-run-as-root --oversubscribe -np 2 " +
                    quote(binDir() + "/all_reduce_perf") + " -b 8 -e 4K -f 8 -n 2 -w 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# Launcher: mpi, 2 processes"), std::string::npos) << r.output;
  EXPECT_EQ(parseTable(r.output).size(), 4u) << r.output;
  r = sh("env " + env + "mpirun --allow-run-as-root --oversubscribe -np 2 " + quote(binDir() + "/mpi_allreduce_bench") +
         " -b 8 -e 4K -f 8 -n 2 -w 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(parseTable(r.output).size(), 4u) << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
}

// merge_runs over runs where some rows failed (null times): it merges what is there, keys the spread by the
// whole row when a size has several (-o all), and compare prints "-" for the missing values.
TEST(PerfTools, MergeRunsAndCompareTolerateFailedRows) {
  REQUIRE_TOOLS();
  if (!exists(binDir() + "/merge_runs") || sh("command -v python3").status != 0) GTEST_SKIP() << "no python3";
  const std::string dir = ::testing::TempDir() + "perf_merge_" + std::to_string(::getpid());
  ASSERT_EQ(sh("mkdir -p " + quote(dir)).status, 0);
  auto row = [](int size, const char* op, const char* time) {
    const bool failed = std::string(time) == "null";
    std::string pl = std::string("{\"time_us\": ") + time + ", \"algbw\": " + (failed ? "null" : "1.0") +
                     ", \"busbw\": " + (failed ? "null" : "2.0") + ", \"wrong\": 0}";
    return "{\"size\": " + std::to_string(size) + ", \"type\": \"float\", \"redop\": \"" + op +
           "\", \"root\": -1, \"out_of_place\": " + pl + ", \"in_place\": " + pl + "}";
  };
  auto write = [&](const std::string& name, const std::string& rows) {
    std::ofstream f(dir + "/" + name);
    f << "{\"results\": [" << rows << "], \"out_of_bounds\": 0}\n";
  };
  write("a.json", row(8, "sum", "5.0") + ", " + row(8, "max", "null") + ", " + row(16, "sum", "6.0"));
  write("b.json", row(8, "sum", "null") + ", " + row(8, "max", "4.0") + ", " + row(16, "sum", "7.0"));
  ProcResult m = sh("python3 " + quote(binDir() + "/merge_runs") + " -o " + quote(dir + "/m.json") + " " +
                    quote(dir + "/a.json") + " " + quote(dir + "/b.json"));
  ASSERT_EQ(m.status, 0) << m.output;
  std::ifstream f(dir + "/m.json");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("\"8 float max -1\""), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("\"8 float sum -1\""), std::string::npos) << ss.str();
  sh("rm -rf " + quote(dir));
}

TEST(PerfTools, CompareScriptOnHost) {
  REQUIRE_TOOLS();
  if (!exists(binDir() + "/mpi_allreduce_bench")) GTEST_SKIP() << "built without MPI";
  if (sh("command -v mpirun && command -v python3").status != 0) GTEST_SKIP() << "no mpirun or python3";
  ProcResult r = sh("env BRAID_BIN_DIR=" + quote(binDir()) + " " + quote(binDir() + "/compare") +
                    " --host all_reduce_perf -b 1K -e 16K -f 4 -n 2 -w 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# A = Braid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MPI_Allreduce"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("A/B: geometric mean"), std::string::npos) << r.output;
}

}  // namespace
