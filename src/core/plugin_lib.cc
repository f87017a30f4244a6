// Library names and logging shared by the network and tuner plugin loaders (plugin_lib.h).
#include "core/plugin_lib.h"

#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "core/log.h"

namespace braid {

std::vector<std::string> pluginCandidates(const std::string& env, const char* kind) {
  std::vector<std::string> names;
  const std::string prefix = std::string("libnccl-") + kind;
  if (env.empty()) return {prefix + ".so"};
  if (strcasecmp(env.c_str(), "none") == 0) return names;
  std::stringstream ss(env);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    names.push_back(item);
    // A bare NAME also stands for libnccl-<kind>-NAME.so (not a path, not already a library's file name).
    const bool isFile = item.find('/') != std::string::npos ||
                        (item.compare(0, 3, "lib") == 0 && item.size() > 3 && item.rfind(".so") == item.size() - 3);
    if (!isFile) names.push_back(prefix + "-" + item + ".so");
  }
  return names;
}

extern "C" void pluginLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  auto lvl = static_cast<LogLevel>(level);
  if (lvl == LogLevel::Abort) lvl = LogLevel::Warn;  // Braid has no abort level: the plugin's ABORT shows as WARN
  if (lvl == LogLevel::None || !logEnabled(lvl, flags)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  logMessage(lvl, flags, file ? file : "plugin", line, "%s", msg);
}

}  // namespace braid
