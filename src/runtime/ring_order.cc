// Ring order: parsing BRAID_RING_ORDER and agreeing it at init (ring_order.h).
#include "runtime/ring_order.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "runtime/comm.h"

namespace braid {

ncclResult_t parseRingOrder(const std::string& text, int nranks, std::vector<int>* order) {
  order->clear();
  if (text.empty()) {
    for (int r = 0; r < nranks; ++r) order->push_back(r);
    return ncclSuccess;
  }
  std::vector<bool> seen(static_cast<size_t>(nranks), false);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const char* b = item.c_str();
    while (*b == ' ') ++b;
    char* end = nullptr;
    const long v = std::strtol(b, &end, 10);
    while (end && *end == ' ') ++end;
    if (*b == '\0' || end == b || *end != '\0')
      return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": \"%s\" is not a rank number", text.c_str(),
                         item.c_str());
    if (v < 0 || v >= nranks)
      return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": rank %ld is not in 0..%d", text.c_str(), v,
                         nranks - 1);
    if (seen[static_cast<size_t>(v)])
      return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": rank %ld appears twice", text.c_str(), v);
    seen[static_cast<size_t>(v)] = true;
    order->push_back(static_cast<int>(v));
    start = comma + 1;
  }
  if (static_cast<int>(order->size()) != nranks)
    return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": names %zu ranks, the communicator has %d",
                       text.c_str(), order->size(), nranks);
  return ncclSuccess;
}

std::vector<int> defaultRingOrder(const std::vector<uint64_t>& hostOf, const std::vector<int>& hostPos) {
  const int n = static_cast<int>(hostOf.size());
  // Hosts in the order of their lowest rank, each with its ranks in rank order.
  std::vector<std::vector<int>> hosts;
  std::map<uint64_t, size_t> index;
  for (int r = 0; r < n; ++r) {
    auto it = index.emplace(hostOf[static_cast<size_t>(r)], hosts.size()).first;
    if (it->second == hosts.size()) hosts.emplace_back();
    hosts[it->second].push_back(r);
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  for (std::vector<int>& ranks : hosts) {
    // The search's places are used only when they order all of this host's ranks: a rank without one (its GPU not
    // in its topology, ranks sharing a GPU) or two ranks claiming one place (hosts that disagree on the topology)
    // leave the host in rank order.
    std::vector<int> pos;
    for (int r : ranks) pos.push_back(static_cast<size_t>(r) < hostPos.size() ? hostPos[static_cast<size_t>(r)] : -1);
    std::vector<int> sorted = pos;
    std::sort(sorted.begin(), sorted.end());
    const bool usable = sorted.front() >= 0 && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    if (usable) {
      std::vector<size_t> idx(ranks.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return pos[a] < pos[b]; });
      std::vector<int> byPos;
      for (size_t i : idx) byPos.push_back(ranks[i]);
      ranks.swap(byPos);
    }
    order.insert(order.end(), ranks.begin(), ranks.end());
  }
  return order;
}

ncclResult_t agreeRingOrder(ncclComm* comm, int hostPos) {
  const int n = comm->nranks;
  const std::string text = params::RingOrder();
  std::vector<int> order;
  std::vector<int32_t> places(static_cast<size_t>(n), -1);
  places[static_cast<size_t>(comm->rank)] = hostPos;
  if (n > 1) BRAID_CHECK(comm->bootstrap->allGather(places.data(), sizeof(int32_t)));
  if (hostPos == kRingPosFailed) return ncclInvalidArgument;  // the caller recorded why
  for (int r = 0; r < n; ++r)
    if (places[static_cast<size_t>(r)] == kRingPosFailed)
      return recordError(ncclInvalidArgument, "rank %d: rank %d cannot use its host's topology (NCCL_TOPO_FILE; "
                         "rank %d says why)", comm->rank, r, r);
  // Rank 0 parses and sends its verdict with the order in one message, so a malformed value fails every rank
  // rather than only rank 0. wire[0]: 0, or the ncclResult_t of rank 0's parse; wire[1 + p]: the rank at p.
  std::vector<int32_t> wire(static_cast<size_t>(n) + 1, 0);
  if (comm->rank == 0) {
    if (text.empty()) {
      std::vector<uint64_t> hostOf(static_cast<size_t>(n), 0);
      for (int r = 0; r < n && static_cast<size_t>(r) < comm->peers.size(); ++r)
        hostOf[static_cast<size_t>(r)] = comm->peers[static_cast<size_t>(r)].hostHash;
      order = defaultRingOrder(hostOf, std::vector<int>(places.begin(), places.end()));
    } else {
      wire[0] = static_cast<int32_t>(parseRingOrder(text, n, &order));
    }
    for (int p = 0; wire[0] == 0 && p < n; ++p) wire[static_cast<size_t>(p) + 1] = order[static_cast<size_t>(p)];
  }
  if (n > 1) BRAID_CHECK(comm->bootstrap->broadcast(wire.data(), sizeof(int32_t) * wire.size(), 0));
  if (wire[0] != 0) {
    if (comm->rank == 0) return static_cast<ncclResult_t>(wire[0]);  // the parse recorded why
    return recordError(static_cast<ncclResult_t>(wire[0]), "rank %d: rank 0's BRAID_RING_ORDER is invalid (rank 0 "
                       "says why)", comm->rank);
  }
  comm->ringOrder.assign(wire.begin() + 1, wire.end());
  comm->ringPos = -1;
  for (int p = 0; p < n; ++p)
    if (comm->ringOrder[static_cast<size_t>(p)] == comm->rank) comm->ringPos = p;
  if (comm->ringPos < 0)
    return recordError(ncclInternalError, "rank %d: not in the agreed ring order", comm->rank);
  if (comm->rank != 0 && !text.empty()) {
    std::vector<int> mine;
    const bool same = parseRingOrder(text, n, &mine) == ncclSuccess && mine == comm->ringOrder;
    if (!same) {
      clearPendingError();  // only this rank's own value, which the ring does not follow
      BRAID_WARN("rank %d: BRAID_RING_ORDER=\"%s\" here, but the ring follows rank 0's order", comm->rank,
                 text.c_str());
    }
  }
  if (comm->rank == 0) {
    bool rankOrder = true;
    for (int p = 0; p < n; ++p) rankOrder = rankOrder && comm->ringOrder[static_cast<size_t>(p)] == p;
    if (!text.empty()) {
      BRAID_INFO(kSubInit, "rings run in the order BRAID_RING_ORDER=\"%s\"", text.c_str());
    } else if (!rankOrder) {
      std::string shown;
      for (int p = 0; p < n && p < 64; ++p) shown += (p ? "," : "") + std::to_string(comm->ringOrder[p]);
      BRAID_INFO(kSubInit, "rings run in the order %s%s (hosts kept together, each host's ranks as its topology's "
                 "search found)", shown.c_str(), n > 64 ? ",..." : "");
    }
  }
  return ncclSuccess;
}

int ringNextRank(const ncclComm* comm) {
  const int n = comm->nranks;
  if (static_cast<int>(comm->ringOrder.size()) != n) return (comm->rank + 1) % n;
  return comm->ringOrder[static_cast<size_t>((comm->ringPos + 1) % n)];
}

int ringPrevRank(const ncclComm* comm) {
  const int n = comm->nranks;
  if (static_cast<int>(comm->ringOrder.size()) != n) return (comm->rank - 1 + n) % n;
  return comm->ringOrder[static_cast<size_t>((comm->ringPos - 1 + n) % n)];
}

}  // namespace braid
