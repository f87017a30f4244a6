// Ring order: parsing BRAID_RING_ORDER and agreeing it at init (ring_order.h).
#include "runtime/ring_order.h"

#include <algorithm>
#include <cstddef>
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

ncclResult_t parseRingOrders(const std::string& text, int nranks, std::vector<std::vector<int>>* orders) {
  orders->clear();
  size_t start = 0;
  do {
    size_t bar = text.find('|', start);
    if (bar == std::string::npos) bar = text.size();
    const std::string one = text.substr(start, bar - start);
    // An empty ring among others is a typo ("0,1||1,0"), not a request for rank order.
    if (one.find_first_not_of(' ') == std::string::npos && text.find('|') != std::string::npos)
      return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": ring %zu is empty", text.c_str(),
                         orders->size());
    std::vector<int> order;
    BRAID_CHECK(parseRingOrder(one, nranks, &order));
    if (std::find(orders->begin(), orders->end(), order) == orders->end()) orders->push_back(order);
    start = bar + 1;
  } while (start <= text.size());
  if (static_cast<int>(orders->size()) > kMaxRingOrders)
    return recordError(ncclInvalidArgument, "BRAID_RING_ORDER=\"%s\": %zu distinct rings, at most %d", text.c_str(),
                       orders->size(), kMaxRingOrders);
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

std::vector<std::vector<int>> defaultRingOrders(const std::vector<uint64_t>& hostOf,
                                                const std::vector<std::vector<int>>& hostPos) {
  const size_t n = hostOf.size();
  size_t nRings = 1;
  for (const std::vector<int>& row : hostPos) nRings = std::max(nRings, row.size());
  std::vector<std::vector<int>> orders;
  for (size_t k = 0; k < nRings; ++k) {
    std::vector<int> pos(n, -1);
    for (size_t r = 0; r < n && r < hostPos.size(); ++r)
      if (!hostPos[r].empty()) pos[r] = hostPos[r][k % hostPos[r].size()];
    std::vector<int> order = defaultRingOrder(hostOf, pos);
    if (std::find(orders.begin(), orders.end(), order) == orders.end()) orders.push_back(std::move(order));
  }
  return orders;
}

namespace {

std::string showOrder(const std::vector<int>& order) {
  std::string shown;
  for (size_t p = 0; p < order.size() && p < 64; ++p) shown += (p ? "," : "") + std::to_string(order[p]);
  return shown + (order.size() > 64 ? ",..." : "");
}

}  // namespace

ncclResult_t agreeRingOrder(ncclComm* comm, const std::vector<int>& hostPos, int maxRings) {
  const int n = comm->nranks;
  const std::string text = params::RingOrder();
  maxRings = std::max(1, std::min(maxRings, kMaxRingOrders));
  // Every rank's places in its host's rings: kMaxRingOrders slots each, -1 past its rings.
  const bool failed = !hostPos.empty() && hostPos[0] == kRingPosFailed;
  std::vector<int32_t> places(static_cast<size_t>(n) * kMaxRingOrders, -1);
  for (size_t k = 0; k < hostPos.size() && k < static_cast<size_t>(kMaxRingOrders); ++k)
    places[static_cast<size_t>(comm->rank) * kMaxRingOrders + k] = hostPos[k];
  if (n > 1) BRAID_CHECK(comm->bootstrap->allGather(places.data(), sizeof(int32_t) * kMaxRingOrders));
  if (failed) return ncclInvalidArgument;  // the caller recorded why
  for (int r = 0; r < n; ++r)
    if (places[static_cast<size_t>(r) * kMaxRingOrders] == kRingPosFailed)
      return recordError(ncclInvalidArgument, "rank %d: rank %d cannot use its host's topology (NCCL_TOPO_FILE; "
                         "rank %d says why)", comm->rank, r, r);
  // Rank 0 parses and sends its verdict with the rings in one message, so a malformed value fails every rank
  // rather than only rank 0. wire[0]: 0, or the ncclResult_t of rank 0's parse; wire[1]: the rings' count;
  // wire[2 + k * n + p]: the rank at position p of ring k.
  std::vector<int32_t> wire(2 + static_cast<size_t>(n) * kMaxRingOrders, 0);
  std::vector<std::vector<int>> orders;
  size_t dropped = 0;
  if (comm->rank == 0) {
    if (text.empty()) {
      std::vector<uint64_t> hostOf(static_cast<size_t>(n), 0);
      std::vector<std::vector<int>> pos(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        if (static_cast<size_t>(r) < comm->peers.size())
          hostOf[static_cast<size_t>(r)] = comm->peers[static_cast<size_t>(r)].hostHash;
        for (int k = 0; k < kMaxRingOrders; ++k) {
          const int32_t v = places[static_cast<size_t>(r) * kMaxRingOrders + k];
          if (v < 0) break;
          pos[static_cast<size_t>(r)].push_back(v);
        }
      }
      orders = defaultRingOrders(hostOf, pos);
    } else {
      wire[0] = static_cast<int32_t>(parseRingOrders(text, n, &orders));
    }
    if (orders.size() > static_cast<size_t>(maxRings)) {
      dropped = orders.size() - static_cast<size_t>(maxRings);
      orders.resize(static_cast<size_t>(maxRings));
    }
    wire[1] = static_cast<int32_t>(orders.size());
    for (size_t k = 0; wire[0] == 0 && k < orders.size(); ++k)
      for (int p = 0; p < n; ++p) wire[2 + k * n + static_cast<size_t>(p)] = orders[k][static_cast<size_t>(p)];
  }
  if (n > 1) BRAID_CHECK(comm->bootstrap->broadcast(wire.data(), sizeof(int32_t) * wire.size(), 0));
  if (wire[0] != 0) {
    if (comm->rank == 0) return static_cast<ncclResult_t>(wire[0]);  // the parse recorded why
    return recordError(static_cast<ncclResult_t>(wire[0]), "rank %d: rank 0's BRAID_RING_ORDER is invalid (rank 0 "
                       "says why)", comm->rank);
  }
  const int nRings = wire[1];
  if (nRings < 1 || nRings > kMaxRingOrders)
    return recordError(ncclInternalError, "rank %d: rank 0 sent %d rings", comm->rank, nRings);
  comm->ringOrders.assign(static_cast<size_t>(nRings), std::vector<int>());
  comm->ringPositions.assign(static_cast<size_t>(nRings), -1);
  for (int k = 0; k < nRings; ++k) {
    const auto first = wire.begin() + 2 + static_cast<ptrdiff_t>(k) * n;
    comm->ringOrders[static_cast<size_t>(k)].assign(first, first + n);
    for (int p = 0; p < n; ++p)
      if (comm->ringOrders[static_cast<size_t>(k)][static_cast<size_t>(p)] == comm->rank)
        comm->ringPositions[static_cast<size_t>(k)] = p;
    if (comm->ringPositions[static_cast<size_t>(k)] < 0)
      return recordError(ncclInternalError, "rank %d: not in the agreed ring %d", comm->rank, k);
  }
  comm->ringOrder = comm->ringOrders[0];
  comm->ringPos = comm->ringPositions[0];
  if (comm->rank != 0 && !text.empty()) {
    std::vector<std::vector<int>> mine;
    const bool parsed = parseRingOrders(text, n, &mine) == ncclSuccess;
    if (mine.size() > static_cast<size_t>(maxRings)) mine.resize(static_cast<size_t>(maxRings));  // as rank 0 cut
    const bool same = parsed && mine == comm->ringOrders;
    if (!same) {
      clearPendingError();  // only this rank's own value, which the rings do not follow
      BRAID_WARN("rank %d: BRAID_RING_ORDER=\"%s\" here, but the rings follow rank 0's", comm->rank, text.c_str());
    }
  }
  if (comm->rank == 0) {
    if (dropped > 0)
      BRAID_WARN("rank 0: %zu ring(s) of BRAID_RING_ORDER left out: this communicator runs at most %d", dropped,
                 maxRings);
    bool rankOrder = nRings == 1;
    for (int p = 0; rankOrder && p < n; ++p) rankOrder = comm->ringOrder[static_cast<size_t>(p)] == p;
    std::string shown;
    for (int k = 0; k < nRings; ++k) shown += (k ? " | " : "") + showOrder(comm->ringOrders[static_cast<size_t>(k)]);
    if (!text.empty()) {
      BRAID_INFO(kSubInit, "rings run in the order BRAID_RING_ORDER=\"%s\" (%d ring(s): %s)", text.c_str(), nRings,
                 shown.c_str());
    } else if (!rankOrder) {
      BRAID_INFO(kSubInit,
                 "rings run in the order %s (hosts kept together, each host's ranks as its topology's "
                 "search found; channel c on ring c %% %d)",
                 shown.c_str(), nRings);
    }
  }
  return ncclSuccess;
}

int ringCount(const ncclComm* comm) { return comm->ringOrders.empty() ? 1 : static_cast<int>(comm->ringOrders.size()); }

int ringNextRank(const ncclComm* comm, int channel) {
  const int n = comm->nranks;
  if (comm->ringOrders.empty()) {
    if (static_cast<int>(comm->ringOrder.size()) != n) return (comm->rank + 1) % n;
    return comm->ringOrder[static_cast<size_t>((comm->ringPos + 1) % n)];
  }
  const size_t k = static_cast<size_t>(channel) % comm->ringOrders.size();
  return comm->ringOrders[k][static_cast<size_t>((comm->ringPositions[k] + 1) % n)];
}

int ringPrevRank(const ncclComm* comm, int channel) {
  const int n = comm->nranks;
  if (comm->ringOrders.empty()) {
    if (static_cast<int>(comm->ringOrder.size()) != n) return (comm->rank - 1 + n) % n;
    return comm->ringOrder[static_cast<size_t>((comm->ringPos - 1 + n) % n)];
  }
  const size_t k = static_cast<size_t>(channel) % comm->ringOrders.size();
  return comm->ringOrders[k][static_cast<size_t>((comm->ringPositions[k] - 1 + n) % n)];
}

void ringNeighbours(const ncclComm* comm, std::vector<int>* next, std::vector<int>* prev) {
  next->clear();
  prev->clear();
  for (int k = 0; k < ringCount(comm); ++k) {
    next->push_back(ringNextRank(comm, k));
    prev->push_back(ringPrevRank(comm, k));
  }
}

std::vector<int32_t> ringTablesFor(const std::vector<std::vector<int>>& orders) {
  std::vector<int32_t> t;
  for (const std::vector<int>& order : orders) {
    const size_t n = order.size();
    const size_t base = t.size();
    t.resize(base + 2 * n, 0);
    for (size_t p = 0; p < n; ++p) {
      t[base + p] = order[p];
      t[base + n + static_cast<size_t>(order[p])] = static_cast<int32_t>(p);
    }
  }
  return t;
}

std::vector<int> ringChannelsWith(const std::vector<std::vector<int>>& orders, int rank, int peer, bool send,
                                  int nChannels) {
  std::vector<int> channels;
  if (orders.empty() || peer == rank) return channels;
  // Whether each ring has `peer` there, once per ring.
  std::vector<char> has(orders.size(), 0);
  for (size_t k = 0; k < orders.size(); ++k) {
    const std::vector<int>& o = orders[k];
    const int n = static_cast<int>(o.size());
    for (int p = 0; p < n; ++p)
      if (o[static_cast<size_t>(p)] == rank) has[k] = o[static_cast<size_t>((p + (send ? 1 : n - 1)) % n)] == peer;
  }
  for (int c = 0; c < nChannels; ++c)
    if (has[static_cast<size_t>(c) % orders.size()]) channels.push_back(c);
  return channels;
}

}  // namespace braid
