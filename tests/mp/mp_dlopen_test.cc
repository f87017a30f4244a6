// Braid answers to libnccl.so.2 for programs that load NCCL by name (JAX, CuPy, anything built on dlopen): a
// real process (dlopen_probe, linked to no NCCL) loads "libnccl.so.2" under LD_PRELOAD or LD_LIBRARY_PATH, and
// dladdr must place the symbol in Braid's file. A stand-in for another NCCL (fake_nccl, libnccl.so.2 in a
// folder of its own) plays NVIDIA's library: loaded by path first, as JAX loads its pip copy, and as the maker
// of handles Braid must recognise as not its own. The init banner is checked here too.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

// Test binaries live in build/bin, the library in build/lib, the stand-in in build/fake_nccl.
std::string binDir() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "build/bin";
  const std::string path(exe, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}
std::string braidLibDir() { return binDir() + "/../lib"; }
std::string braidSoname() { return braidLibDir() + "/libnccl.so.2"; }
std::string fakeDir() { return binDir() + "/../fake_nccl"; }
std::string fakeLib() { return fakeDir() + "/libnccl.so.2"; }

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct ProbeRun {
  int exitCode = -1;
  std::string output;                         // stdout and stderr together
  std::map<std::string, std::string> fields;  // "key value" lines of stdout (the first of each key)
  std::string field(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  }
};

// Runs dlopen_probe with exactly `env` (nothing inherited, so the caller's LD_* cannot leak in) and `args`.
ProbeRun runProbe(const std::vector<std::string>& env, const std::vector<std::string>& args) {
  ProbeRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  const std::string probe = binDir() + "/dlopen_probe";
  std::vector<std::string> argvS{probe};
  argvS.insert(argvS.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : argvS) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> envS = env;
  envS.push_back("PATH=/usr/bin:/bin");
  for (auto& e : envS) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execve(probe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) run.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) run.exitCode = WEXITSTATUS(status);
  size_t pos = 0;
  while (pos < run.output.size()) {
    size_t end = run.output.find('\n', pos);
    if (end == std::string::npos) end = run.output.size();
    const std::string line = run.output.substr(pos, end - pos);
    const size_t sp = line.find(' ');
    if (sp != std::string::npos && !run.fields.count(line.substr(0, sp)))
      run.fields[line.substr(0, sp)] = line.substr(sp + 1);
    pos = end + 1;
  }
  return run;
}

// The lines of `text` that contain `needle`.
std::vector<std::string> linesWith(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (line.find(needle) != std::string::npos) out.push_back(line);
    pos = end + 1;
  }
  return out;
}

class DlopenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sameFile(braidSoname(), braidLibDir() + "/libbraid.so"))
        << braidSoname() << " should name Braid's libbraid.so";
    ASSERT_EQ(access((binDir() + "/dlopen_probe").c_str(), X_OK), 0) << "dlopen_probe is not built";
  }
  void expectBraid(const ProbeRun& r, const char* how) {
    ASSERT_EQ(r.exitCode, 0) << how << ":\n" << r.output;
    ASSERT_TRUE(r.fields.count("resolved")) << r.output;
    EXPECT_TRUE(sameFile(r.field("resolved"), braidSoname()))
        << how << ": dlopen(\"libnccl.so.2\") resolved ncclAllReduce into " << r.field("resolved") << ", not Braid's "
        << braidSoname();
    EXPECT_EQ(r.field("version"), "22809") << how;
  }
};

// This test program links Braid like any application: the loader must have loaded it under the soname,
// libnccl.so.2, so the program would run as well on NVIDIA's library (and on Braid's by that name).
TEST_F(DlopenTest, ProgramLinkedAgainstBraidNeedsLibncclSo2) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);  // keeps the link needed
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(dlopen(nullptr, RTLD_NOW), RTLD_DI_LINKMAP, &map), 0) << dlerror();
  std::string loadedAs;
  for (; map != nullptr; map = map->l_next) {
    const std::string name = map->l_name ? map->l_name : "";
    if (!name.empty() && sameFile(name, braidSoname())) loadedAs = name;
  }
  ASSERT_FALSE(loadedAs.empty()) << "Braid is not loaded in the test program";
  EXPECT_EQ(loadedAs.substr(loadedAs.rfind('/') + 1), "libnccl.so.2") << "loaded as " << loadedAs;
}

TEST_F(DlopenTest, PreloadedBraidIsWhatDlopenByNameReturns) {
  expectBraid(runProbe({"LD_PRELOAD=" + braidSoname()}, {}), "LD_PRELOAD");
}

TEST_F(DlopenTest, LibraryPathFindsBraid) {
  expectBraid(runProbe({"LD_LIBRARY_PATH=" + braidLibDir()}, {}), "LD_LIBRARY_PATH");
  // Ahead of another libnccl.so.2 on the path, Braid is the one found.
  expectBraid(runProbe({"LD_LIBRARY_PATH=" + braidLibDir() + ":" + fakeDir()}, {}), "LD_LIBRARY_PATH, Braid first");
}

// JAX loads its pip copy of NCCL by path before XLA opens "libnccl.so.2": a preloaded Braid still wins, since
// the loader matches by soname in load order; on the library path alone, the copy loaded first wins.
TEST_F(DlopenTest, PreloadWinsOverAnotherNcclLoadedByPathFirst) {
  expectBraid(runProbe({"LD_PRELOAD=" + braidSoname()}, {"--first", fakeLib()}), "LD_PRELOAD, other loaded first");
  const ProbeRun pathOnly = runProbe({"LD_LIBRARY_PATH=" + braidLibDir()}, {"--first", fakeLib()});
  ASSERT_EQ(pathOnly.exitCode, 0) << pathOnly.output;
  EXPECT_TRUE(sameFile(pathOnly.field("resolved"), fakeLib())) << pathOnly.output;
  EXPECT_EQ(pathOnly.field("version"), "29901");
}

TEST_F(DlopenTest, WithoutPreloadOrPathDlopenDoesNotFindBraid) {
  const ProbeRun r = runProbe({}, {});
  if (r.exitCode == 2) GTEST_SKIP() << "no libnccl.so.2 on this system's default search path: " << r.output;
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_FALSE(sameFile(r.field("resolved"), braidSoname())) << r.output;
  std::printf("without LD_PRELOAD or LD_LIBRARY_PATH, libnccl.so.2 is %s (version %s)\n", r.field("resolved").c_str(),
              r.field("version").c_str());
}

TEST_F(DlopenTest, ForeignHandleIsNamedAsAnotherLibrarysCommunicator) {
  const ProbeRun r = runProbe({"LD_PRELOAD=" + braidSoname()}, {"--foreign", fakeLib()});
  expectBraid(r, "LD_PRELOAD");
  EXPECT_EQ(r.field("async-result"), "4") << r.output;  // ncclInvalidArgument
  const std::string msg = r.field("error");
  EXPECT_NE(msg.find("ncclCommGetAsyncError"), std::string::npos) << msg;
  EXPECT_NE(msg.find("was not created by Braid"), std::string::npos) << msg;
  char real[PATH_MAX];
  ASSERT_NE(realpath(fakeLib().c_str(), real), nullptr);
  EXPECT_NE(msg.find(real), std::string::npos) << "the message should name " << real << ": " << msg;
  EXPECT_EQ(msg.find("not a valid communicator"), std::string::npos) << msg;
}

TEST_F(DlopenTest, InitBannerShowsNcclVersionThenBraid) {
  for (const char* level : {"VERSION", "WARN", "INFO"}) {
    const ProbeRun r =
        runProbe({"LD_PRELOAD=" + braidSoname(), "BRAID_HOST_COMM=1", std::string("NCCL_DEBUG=") + level}, {"--init"});
    ASSERT_EQ(r.exitCode, 0) << level << ":\n" << r.output;
    ASSERT_EQ(r.field("init"), "0") << level << ":\n" << r.output;
    const auto nccl = linesWith(r.output, "NCCL version 2.28.9+cuda");
    const auto braid = linesWith(r.output, " API) from ");
    ASSERT_EQ(nccl.size(), 1u) << level << ":\n" << r.output;
    ASSERT_EQ(braid.size(), 1u) << level << ":\n" << r.output;
    // Braid's line comes right after NCCL's and names the file that served.
    EXPECT_NE(r.output.find(nccl[0] + "\n" + braid[0]), std::string::npos) << r.output;
    EXPECT_NE(braid[0].find("Braid 0."), std::string::npos) << braid[0];
    EXPECT_NE(braid[0].find("(NCCL 2.28.9 API) from "), std::string::npos) << braid[0];
    EXPECT_NE(braid[0].find("libnccl.so.2"), std::string::npos) << braid[0];
    if (std::strcmp(level, "INFO") == 0) {
      EXPECT_NE(nccl[0].find(" BRAID INFO NCCL version"), std::string::npos) << nccl[0];
    } else {
      EXPECT_EQ(nccl[0].rfind("NCCL version", 0), 0u) << "a bare line, as NCCL prints it: " << nccl[0];
    }
  }
  const ProbeRun quiet = runProbe({"LD_PRELOAD=" + braidSoname(), "BRAID_HOST_COMM=1"}, {"--init"});
  ASSERT_EQ(quiet.field("init"), "0") << quiet.output;
  EXPECT_TRUE(linesWith(quiet.output, "NCCL version").empty()) << "no banner without NCCL_DEBUG:\n" << quiet.output;
}

}  // namespace
