// Channel-count agreement shared by host and device communicators (see comm.h).
#include "core/comm.h"

#include <algorithm>
#include <vector>

#include "core/param.h"
#include "core/result.h"

namespace braid {

ncclResult_t agreeOnChannels(ncclComm* comm, int64_t preferred, int maxChannels) {
  const CommConfig& cfg = comm->config;
  int64_t n = preferred;
  int64_t lo = std::max<int64_t>(params::MinNChannels(), params::MinCtas());
  int64_t hi = params::MaxNChannels() > 0 ? params::MaxNChannels() : params::MaxCtas();
  if (cfg.minChannels > 0) lo = std::max<int64_t>(lo, cfg.minChannels);
  if (cfg.maxChannels > 0) hi = hi > 0 ? std::min<int64_t>(hi, cfg.maxChannels) : cfg.maxChannels;
  if (lo > 0) n = std::max(n, lo);
  if (hi > 0) n = std::min(n, hi);
  std::vector<int> channels(comm->nranks);
  channels[comm->rank] = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n, maxChannels)));
  BRAID_CHECK(comm->bootstrap->allGather(channels.data(), sizeof(int)));
  comm->nChannels = *std::min_element(channels.begin(), channels.end());
  return ncclSuccess;
}

}  // namespace braid
