// The library's identity: own file (dladdr on a function of ours), other NCCL libraries (/proc/self/maps)
// and the init banner.
#include "core/library_info.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "core/log.h"
#include "nccl.h"

#ifndef BRAID_VERSION
#define BRAID_VERSION "unknown"
#endif
#ifndef BRAID_CUDA_VERSION
#define BRAID_CUDA_VERSION "unknown"
#endif

namespace braid {
namespace {

#define BRAID_STR2(x) #x
#define BRAID_STR(x) BRAID_STR2(x)
// The same text NVIDIA's library prints, so tools that look for it find it.
constexpr char kNcclVersionLine[] =
    "NCCL version " BRAID_STR(NCCL_MAJOR) "." BRAID_STR(NCCL_MINOR) "." BRAID_STR(NCCL_PATCH) NCCL_SUFFIX
    "+cuda" BRAID_CUDA_VERSION;

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return a == b;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// libnccl.so, libnccl.so.2, libnccl.so.2.28.9: NCCL itself, not its plugins (libnccl-net.so and friends).
bool isNcclFileName(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.rfind("libnccl.so", 0) == 0;
}

}  // namespace

const char* braidVersionString() { return "Braid " BRAID_VERSION; }

std::string ownLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ownLibraryPath), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::vector<std::string> otherNcclLibrariesIn(const std::string& mapsText, const std::string& ownPath) {
  std::vector<std::string> out;
  std::istringstream lines(mapsText);
  std::string line;
  while (std::getline(lines, line)) {
    // address perms offset dev inode path: the path is what follows the fifth field.
    std::istringstream fields(line);
    std::string skip, path;
    for (int i = 0; i < 5; ++i) fields >> skip;
    std::getline(fields >> std::ws, path);
    if (path.empty() || path[0] != '/' || !isNcclFileName(path)) continue;
    bool seen = false;
    for (const auto& p : out) seen = seen || p == path;
    if (seen || (!ownPath.empty() && sameFile(path, ownPath))) continue;
    out.push_back(path);
  }
  return out;
}

std::vector<std::string> otherNcclLibraries() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return otherNcclLibrariesIn(text.str(), ownLibraryPath());
}

void showVersionOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!logEnabled(LogLevel::Version, kSubAll)) return;
    // NVIDIA's library prints its line as a bare VERSION line under NCCL_DEBUG=VERSION or WARN, as INFO above.
    const LogLevel level = logEnabled(LogLevel::Info, kSubAll) ? LogLevel::Info : LogLevel::Version;
    const std::string own = ownLibraryPath();
    // One message of two lines: written at once, so no other thread's line comes between them.
    logMessage(level, kSubAll, __FILE__, __LINE__, "%s\n%s (NCCL %d.%d.%d API) from %s", kNcclVersionLine,
               braidVersionString(), NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, own.empty() ? "an unknown file" : own.c_str());
    if (level == LogLevel::Info)
      for (const auto& other : otherNcclLibraries())
        logMessage(level, kSubAll, __FILE__, __LINE__,
                   "%s is mapped into this process too; communicators it creates are not Braid's", other.c_str());
  });
}

}  // namespace braid
