// What NCCL's plugin kinds (network, tuner) share when Braid loads them: the library names an NCCL_*_PLUGIN value
// stands for, tried in NCCL's order, and the logger handed to a plugin's init, which sends its lines to Braid's log.
#pragma once

#include <string>
#include <vector>

namespace braid {

// The libraries to try for `env` (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN), `kind` being "net" or "tuner": unset,
// libnccl-<kind>.so; "none", nothing; else each comma-separated item as given, a bare NAME also as
// libnccl-<kind>-NAME.so.
std::vector<std::string> pluginCandidates(const std::string& env, const char* kind);

// ncclDebugLogger_t: a plugin's log line, at its level (ABORT shows as WARN) and subsystem flags.
extern "C" void pluginLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

}  // namespace braid
