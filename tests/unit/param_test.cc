// The environment variables of params.def: docs/ENVIRONMENT.md has one row for each (and none for others), and
// a variable Braid accepts but does not implement logs exactly one warning per process when set to a value it
// does not implement, however many communicators the process creates; unset, or set to what Braid does anyway,
// none. The warning cases run in child processes: the warning is once per process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "nccl.h"

using namespace braid;

namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// docs/ENVIRONMENT.md of the tree this test was compiled from (BRAID_SOURCE_DIR, if set, names another).
std::string environmentDocPath() {
  if (const char* src = getenv("BRAID_SOURCE_DIR")) return std::string(src) + "/docs/ENVIRONMENT.md";
  std::string here = __FILE__;  // <source>/tests/unit/param_test.cc
  for (int up = 0; up < 3; ++up) {
    const size_t slash = here.find_last_of('/');
    here = slash == std::string::npos ? "." : here.substr(0, slash);
  }
  return here + "/docs/ENVIRONMENT.md";
}

const ParamDesc* findParam(const char* env) {
  int n = 0;
  const ParamDesc* t = paramTable(&n);
  for (int i = 0; i < n; ++i)
    if (std::string(t[i].env) == env) return &t[i];
  return nullptr;
}

// The variable a table row of the doc is about: a line "| `NAME` | ...".
std::string rowVariable(const std::string& line) {
  if (line.rfind("| `", 0) != 0) return "";
  const size_t end = line.find('`', 3);
  return end == std::string::npos ? "" : line.substr(3, end - 3);
}

int countOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Runs `body` in a child process whose log goes to a fresh file; returns the log, or fails the test when the
// child does not exit with 0.
template <typename Body>
std::string logOfChild(Body body) {
  char path[] = "/tmp/braid_param_log_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  if (fd < 0) return "";
  close(fd);
  const pid_t pid = fork();
  EXPECT_GE(pid, 0);
  if (pid == 0) {
    alarm(120);  // a child that hangs dies instead of holding the test
    setenv("NCCL_DEBUG", "WARN", 1);
    setenv("NCCL_DEBUG_FILE", path, 1);
    setenv("BRAID_HOST_COMM", "1", 1);  // host communicators: no GPU needed
    resetLogging();
    _exit(body());
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  const std::string log = readFile(path);
  unlink(path);
  return log;
}

// In a child: clears every variable that could warn, sets `env`, reads parameters and creates and destroys
// three one-rank communicators; with `threads`, four threads ask for the warnings meanwhile. Exit status 0 on
// success.
int childCreatingComms(const std::map<std::string, std::string>& env, bool withThreads) {
  int n = 0;
  const ParamDesc* t = paramTable(&n);
  for (int i = 0; i < n; ++i)
    if (t[i].kind == ParamKind::Ignored || t[i].kind == ParamKind::Partial) unsetenv(t[i].env);
  for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::vector<std::thread> threads;
  for (int i = 0; withThreads && i < 4; ++i) threads.emplace_back([] { warnUnimplementedParams(); });
  for (int round = 0; round < 3; ++round) {
    (void)params::P2pLevel();
    (void)params::BuffSize();
    (void)params::Algo();
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 3;
    if (ncclCommDestroy(comm) != ncclSuccess) return 4;
  }
  for (auto& th : threads) th.join();
  if (withThreads) warnUnimplementedParams();
  return 0;
}

// The warnings of the child in SetUnimplementedVariableWarnsOncePerProcess: one for each variable set to a
// value Braid does not implement, none for NCCL_NVLS_ENABLE=0.
void expectOneWarningEach(const std::string& log) {
  EXPECT_EQ(countOccurrences(log, "NCCL_NET_GDR_LEVEL=PHB has no effect in Braid"), 1) << log;
  EXPECT_EQ(countOccurrences(log, "NCCL_COLLNET_ENABLE=1 has no effect in Braid"), 1) << log;
  EXPECT_EQ(countOccurrences(log, "NCCL_IB_DISABLE"), 0) << log;  // implemented
  EXPECT_EQ(countOccurrences(log, "NCCL_P2P_LEVEL"), 0) << log;    // implemented
  EXPECT_EQ(countOccurrences(log, "NCCL_NVLS_ENABLE"), 0) << log;  // 0 asks for what Braid does
  EXPECT_EQ(countOccurrences(log, "has no effect in Braid"), 2) << log;
  EXPECT_NE(log.find("BRAID WARN"), std::string::npos) << log;
}

}  // namespace

TEST(ParamDoc, EnvironmentMdHasOneRowPerVariableOfParamsDef) {
  const std::string path = environmentDocPath();
  const std::string doc = readFile(path);
  ASSERT_FALSE(doc.empty()) << "cannot read " << path;
  std::map<std::string, int> rows;
  std::map<std::string, std::string> rowText;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    const std::string v = rowVariable(line);
    if (v.rfind("NCCL_", 0) != 0 && v.rfind("BRAID_", 0) != 0) continue;
    ++rows[v];
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    rowText[v] = lower;
  }
  int n = 0;
  const ParamDesc* t = paramTable(&n);
  std::set<std::string> declared;
  for (int i = 0; i < n; ++i) {
    declared.insert(t[i].env);
    EXPECT_EQ(rows[t[i].env], 1) << t[i].env << " must have exactly one row in " << path;
    if (t[i].kind == ParamKind::Ignored)
      EXPECT_NE(rowText[t[i].env].find("accepted, not implemented (warns once)"), std::string::npos)
          << t[i].env << ": its row must say it is accepted, not implemented (warns once)";
    if (t[i].kind == ParamKind::Partial)
      EXPECT_NE(rowText[t[i].env].find("warns once"), std::string::npos)
          << t[i].env << ": its row must say which values warn once";
  }
  for (const auto& r : rows)
    EXPECT_TRUE(declared.count(r.first)) << path << " has a row for " << r.first << ", which params.def lacks";
}

TEST(ParamWarn, OnlyUnimplementedValuesWarn) {
  const ParamDesc* nvls = findParam("NCCL_NVLS_ENABLE");
  const ParamDesc* collnet = findParam("NCCL_COLLNET_ENABLE");
  const ParamDesc* ib = findParam("NCCL_IB_DISABLE");
  const ParamDesc* gdrLevel = findParam("NCCL_NET_GDR_LEVEL");
  const ParamDesc* level = findParam("NCCL_P2P_LEVEL");
  const ParamDesc* buff = findParam("NCCL_BUFFSIZE");
  ASSERT_TRUE(nvls && collnet && ib && gdrLevel && level && buff);
  EXPECT_EQ(nvls->kind, ParamKind::Ignored);
  EXPECT_EQ(level->kind, ParamKind::Str);
  EXPECT_FALSE(paramValueUnimplemented(*nvls, nullptr));
  EXPECT_FALSE(paramValueUnimplemented(*nvls, ""));    // empty: unset
  EXPECT_FALSE(paramValueUnimplemented(*nvls, "0"));   // asks for what Braid does
  EXPECT_TRUE(paramValueUnimplemented(*nvls, "1"));
  EXPECT_TRUE(paramValueUnimplemented(*nvls, "2"));
  EXPECT_FALSE(paramValueUnimplemented(*collnet, "0"));
  EXPECT_TRUE(paramValueUnimplemented(*collnet, "1"));
  EXPECT_EQ(ib->kind, ParamKind::Int);  // implemented: never warns
  EXPECT_FALSE(paramValueUnimplemented(*ib, "0"));
  EXPECT_TRUE(paramValueUnimplemented(*gdrLevel, "PHB"));
  for (const char* v : {"LOC", "0", "NVL", "PIX", "SYS"}) EXPECT_FALSE(paramValueUnimplemented(*level, v)) << v;
  EXPECT_FALSE(paramValueUnimplemented(*buff, "12345"));  // implemented: never
}

TEST(ParamWarn, SetUnimplementedVariableWarnsOncePerProcess) {
  for (bool withThreads : {false, true}) {
    SCOPED_TRACE(withThreads ? "communicators and threads" : "communicators only");
    const std::string log = logOfChild([withThreads] {
      return childCreatingComms({{"NCCL_NET_GDR_LEVEL", "PHB"},
                                 {"NCCL_P2P_LEVEL", "NVL"},
                                 {"NCCL_NVLS_ENABLE", "0"},
                                 {"NCCL_IB_DISABLE", "0"},
                                 {"NCCL_COLLNET_ENABLE", "1"}},
                                withThreads);
    });
    expectOneWarningEach(log);
  }
}

TEST(ParamWarn, NothingSetNoWarning) {
  const std::string log = logOfChild([] {
    return childCreatingComms({{"NCCL_NVLS_ENABLE", "0"},
                               {"NCCL_IB_DISABLE", "1"},
                               {"NCCL_COLLNET_ENABLE", "0"},
                               {"NCCL_NET_PLUGIN", "none"},
                               {"NCCL_P2P_LEVEL", "SYS"},
                               {"NCCL_TOPO_FILE", ""}},
                              true);
  });
  EXPECT_EQ(countOccurrences(log, "has no effect in Braid"), 0) << log;
}

// Without the once-per-process guard, each check warns again: the guard is what makes it once.
TEST(ParamWarn, CheckCountsWhatItWarnsOf) {
  const std::string log = logOfChild([] {
    int n = 0;
    const ParamDesc* t = paramTable(&n);
    for (int i = 0; i < n; ++i)
      if (t[i].kind == ParamKind::Ignored || t[i].kind == ParamKind::Partial) unsetenv(t[i].env);
    if (warnUnimplementedParamsNow() != 0) return 1;
    setenv("NCCL_NET_GDR_LEVEL", "PHB", 1);
    setenv("NCCL_COLLNET_ENABLE", "1", 1);
    if (warnUnimplementedParamsNow() != 2) return 2;
    if (warnUnimplementedParamsNow() != 2) return 3;
    return 0;
  });
  EXPECT_EQ(countOccurrences(log, "NCCL_NET_GDR_LEVEL=PHB has no effect in Braid"), 2) << log;
  EXPECT_EQ(countOccurrences(log, "NCCL_COLLNET_ENABLE=1 has no effect in Braid"), 2) << log;
}
