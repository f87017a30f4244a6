// Channel-count agreement shared by host and device communicators (see comm.h).
#include "core/comm.h"

#include <algorithm>
#include <vector>

#include "core/param.h"
#include "core/result.h"

namespace braid {

ncclResult_t agreeOnChannels(ncclComm* comm, int64_t preferred, int maxChannels, bool bigFifoOk) {
  const CommConfig& cfg = comm->config;
  int64_t n = preferred;
  int64_t lo = std::max<int64_t>(params::MinNChannels(), params::MinCtas());
  const int64_t hi = foldBounds(envMaxChannels(), cfg.maxChannels);
  if (cfg.minChannels > 0) lo = std::max<int64_t>(lo, cfg.minChannels);
  if (lo > 0) n = std::max(n, lo);
  if (hi > 0) n = std::min(n, hi);
  struct Offer {
    int64_t channels;
    int64_t buffBytes;  // -1: NCCL_BUFFSIZE unset here (the default applies)
    int64_t bigFifoOk;
  };
  std::vector<Offer> all(comm->nranks);
  all[comm->rank] = {std::max<int64_t>(1, std::min<int64_t>(n, maxChannels)),
                     buffSizeSet() ? buffSizeBytes(comm->rank == 0) : -1, bigFifoOk ? 1 : 0};
  BRAID_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Offer)));
  int64_t chans = all[0].channels;
  bool allBig = true;
  for (const Offer& o : all) {
    chans = std::min(chans, o.channels);
    allBig = allBig && o.bigFifoOk != 0;
  }
  comm->nChannels = static_cast<int>(chans);
  // FIFO size: rank 0's, as for the tuner's agreed settings (a warning there reports differing environments);
  // where rank 0 set none, the default for the agreed channels, from agreed facts only.
  comm->buffBytes = all[0].buffBytes >= 0 ? all[0].buffBytes : agreedFifoBytes(comm->nChannels, allBig);
  return ncclSuccess;
}

}  // namespace braid
