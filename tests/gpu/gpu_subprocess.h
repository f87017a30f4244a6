// GPU tests that start other programs of the build (braidrun, the demo, the perf tools) and read their output.
#pragma once

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace gpu_test {

inline int gpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// The folder of the running test binary: the build's bin/, where braidrun and the tools are.
inline std::string binDir() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string p = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("build/bin/x");
  return p.substr(0, p.rfind('/'));
}

// Runs a shell command, returns its exit status and appends its output (stdout and stderr) to *out.
inline int runCommand(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (size_t got = fread(buf, 1, sizeof(buf), p)) out->append(buf, got);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// How many times `what` occurs in `text` (overlapping occurrences counted).
inline int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace gpu_test
