// topo_search: ring orders for the ranks of one host and how many rings to run (searchRings), and the rings as
// NCCL's graph XML (ringsGraphXml, what NCCL_GRAPH_DUMP_FILE holds). See topology.h.
//
// A ring's hop from one rank to the next follows the path between their GPUs (topo_paths.cc). A ring's bandwidth
// is that of its most loaded link: the link's bandwidth divided by the hops of the ring that cross it in that
// direction, so two hops over one PCIe switch uplink get half of it each (NCCL's search likewise takes each
// channel's bandwidth off every link the channel follows). Rings compare by, in order:
//   1. bandwidth, higher first;
//   2. the class of the worst hop, better first;
//   3. the number of hops of that class, fewer first (fewer host-bridge or socket crossings);
//   4. the links followed in all, fewer first;
//   5. the order met. Rank 0 comes first (a rotation is the same ring) and the rest is walked in lexicographic
//      order from rank order, so rank order stays whenever nothing is better: a full mesh keeps it.
// Up to kExhaustive ranks the search tries every order, depth first, dropping a prefix as soon as it cannot beat
// the best ring so far (its bandwidth only falls and its worst class only rises as hops are added): 8 ranks are
// 5040 orders at most. Beyond that it walks greedily from rank 0 to the rank whose hop keeps the ring best by the
// same comparison, and keeps that ring only if it beats rank order.
//
// How many rings: what one channel moves is capped at C, NCCL's highest intra-node search speed (60 GB/s from
// sm90, 40 before). With B the best ring's bandwidth, each per-ring speed s = min(B, C) / k, k = 1, 2, ..., is tried:
// rings are packed greedily onto what the links have left (the last ring again while it still carries s, else the
// best ring that does and whose worst class is no worse than the first ring's) until maxRings or none fits, so a
// cleverer choice of rings may fit more. The speed whose rings carry the most in all (count x s) wins, the higher
// speed on a tie; searching stops once maxRings x s cannot beat that. So four Hopper GPUs on an NVSwitch (18 NVLinks,
// about 370 GB/s each way) run rank order six times at 60 GB/s, and a DGX-1 of V100s runs its double-NVLink cycle twice
// each way and its single-NVLink cycle once each way, six rings at 20 GB/s: every NVLink full in both directions.
// One rank is one ring at C. When some pair of GPUs has no path at all, the answer is NCCL's fallback: one ring in
// rank order, bandwidth 0, class DIS.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "core/result.h"
#include "topology/topo_graph.h"
#include "topology/topology.h"

namespace braid {
namespace {

constexpr int kExhaustive = 8;
constexpr int kMaxRings = 64;  // what searchRings looks for at most, whatever the caller asks
constexpr double kEps = 1e-9;  // relative: bandwidths divided and subtracted compare equal within this

// One hop of a ring: the path from one rank's GPU to another's.
struct Hop {
  bool ok = false;  // a path exists
  PathClass cls = PathClass::Dis;
  std::vector<int> links;  // directed link ids (see Links) the hop crosses
};

// The directed links the hops' routes use and their bandwidths; parallel links of one kind add up, as in
// computePaths.
class Links {
 public:
  int id(const Topology& topo, int from, int to) {
    auto it = ids_.find({from, to});
    if (it != ids_.end()) return it->second;
    std::map<TopoLinkKind, double> byKind;
    for (const TopoLink& l : topo.nodes[from].links)
      if (l.peer == to && l.bw > 0) byKind[l.kind] += l.bw;
    double bw = 0;
    for (const auto& kv : byKind) bw = std::max(bw, kv.second);
    ids_[{from, to}] = static_cast<int>(bw_.size());
    bw_.push_back(bw);
    return static_cast<int>(bw_.size()) - 1;
  }
  const std::vector<double>& bandwidths() const { return bw_; }

 private:
  std::map<std::pair<int, int>, int> ids_;
  std::vector<double> bw_;
};

bool approxEq(double a, double b) { return std::fabs(a - b) <= kEps * std::max(std::fabs(a), std::fabs(b)); }
bool atLeast(double a, double b) { return a >= b || approxEq(a, b); }

struct Score {
  double bw = 0;
  PathClass worst = PathClass::Loc;
  int nWorst = 0;
  int links = 0;
};

// Whether a beats b (rules 1-4 of the header); equal scores are no improvement, which keeps the order met.
bool beats(const Score& a, const Score& b) {
  if (!approxEq(a.bw, b.bw)) return a.bw > b.bw;
  if (a.worst != b.worst) return a.worst < b.worst;
  if (a.nWorst != b.nWorst) return a.nWorst < b.nWorst;
  return a.links < b.links;
}

// Rings over the hops of n ranks, on the links' remaining bandwidths `cap`.
class RingFinder {
 public:
  RingFinder(int n, std::vector<Hop> hops) : n_(n), hops_(std::move(hops)) {}

  const Hop& hop(int from, int to) const { return hops_[from * n_ + to]; }

  // The ring's score on `cap`; false if a hop has no path.
  bool evaluate(const std::vector<int>& ring, const std::vector<double>& cap, Score* out) const {
    std::vector<int> uses(cap.size(), 0);
    Score s;
    s.bw = HUGE_VAL;
    for (int i = 0; i < n_; ++i) {
      const Hop& h = hop(ring[i], ring[(i + 1) % n_]);
      if (!h.ok) return false;
      addHop(h, cap, &uses, &s);
    }
    *out = s;
    return true;
  }

  // The best ring on `cap` that carries at least `floor` with no hop worse than `limit`; false if none.
  bool best(const std::vector<double>& cap, double floor, PathClass limit, std::vector<int>* ring, Score* score) {
    cap_ = &cap;
    floor_ = floor;
    limit_ = limit;
    found_ = false;
    if (n_ <= kExhaustive) {
      order_.assign(1, 0);
      used_.assign(n_, 0);
      used_[0] = 1;
      uses_.assign(cap.size(), 0);
      Score start;
      start.bw = HUGE_VAL;
      walk(start);
    } else {
      greedy();
    }
    if (!found_) return false;
    *ring = best_;
    *score = bestScore_;
    return true;
  }

 private:
  static void addHop(const Hop& h, const std::vector<double>& cap, std::vector<int>* uses, Score* s) {
    for (int l : h.links) {
      ++(*uses)[l];
      s->bw = std::min(s->bw, cap[l] / (*uses)[l]);
    }
    s->links += static_cast<int>(h.links.size());
    if (h.cls > s->worst) {
      s->worst = h.cls;
      s->nWorst = 1;
    } else if (h.cls == s->worst) {
      ++s->nWorst;
    }
  }
  void removeHop(const Hop& h) {
    for (int l : h.links) --uses_[l];
  }
  // Whether a prefix (or ring) scoring `s` can still be kept: every measure only worsens as hops are added.
  bool viable(const Score& s) const {
    if (s.worst > limit_ || !atLeast(s.bw, floor_) || s.bw <= 0) return false;
    return !found_ || !beats(bestScore_, s);
  }
  void offer(const std::vector<int>& ring, const Score& s) {
    if (!viable(s) || (found_ && !beats(s, bestScore_))) return;
    best_ = ring;
    bestScore_ = s;
    found_ = true;
  }

  void walk(const Score& prefix) {
    const int last = order_.back();
    if (static_cast<int>(order_.size()) == n_) {
      const Hop& h = hop(last, order_[0]);
      if (!h.ok) return;
      Score s = prefix;
      addHop(h, *cap_, &uses_, &s);
      offer(order_, s);
      removeHop(h);
      return;
    }
    for (int r = 0; r < n_; ++r) {
      if (used_[r]) continue;
      const Hop& h = hop(last, r);
      if (!h.ok) continue;
      Score s = prefix;
      addHop(h, *cap_, &uses_, &s);
      if (viable(s)) {
        used_[r] = 1;
        order_.push_back(r);
        walk(s);
        order_.pop_back();
        used_[r] = 0;
      }
      removeHop(h);
    }
  }

  void greedy() {
    std::vector<int> ring{0};
    std::vector<char> used(n_, 0);
    used[0] = 1;
    uses_.assign(cap_->size(), 0);
    Score s;
    s.bw = HUGE_VAL;
    bool complete = true;
    while (static_cast<int>(ring.size()) < n_ && complete) {
      int pick = -1;
      Score pickScore;
      for (int r = 0; r < n_; ++r) {
        const Hop& h = hop(ring.back(), r);
        if (used[r] || !h.ok) continue;
        Score t = s;
        addHop(h, *cap_, &uses_, &t);
        removeHop(h);
        if (pick < 0 || beats(t, pickScore)) {
          pick = r;
          pickScore = t;
        }
      }
      if (pick < 0) {
        complete = false;
        break;
      }
      addHop(hop(ring.back(), pick), *cap_, &uses_, &s);
      used[pick] = 1;
      ring.push_back(pick);
    }
    std::vector<int> rankOrder(n_);
    for (int r = 0; r < n_; ++r) rankOrder[r] = r;
    Score t;
    if (evaluate(rankOrder, *cap_, &t)) offer(rankOrder, t);
    if (complete && evaluate(ring, *cap_, &t)) offer(ring, t);
  }

  int n_;
  std::vector<Hop> hops_;
  const std::vector<double>* cap_ = nullptr;
  double floor_ = 0;
  PathClass limit_ = PathClass::Dis;
  std::vector<int> order_;
  std::vector<char> used_;
  std::vector<int> uses_;
  bool found_ = false;
  std::vector<int> best_;
  Score bestScore_;
};

// What one channel moves (the C of the header), from the oldest GPU of the ranks.
double channelCap(const Topology& topo, const std::vector<int>& rankGpu) {
  int sm = 1000;
  for (int g : rankGpu) sm = std::min(sm, topo.nodes[g].sm);
  return sm >= 90 ? 60.0 : 40.0;
}

// Takes `speed` per use off every link the ring crosses.
void consume(const RingFinder& finder, const std::vector<int>& ring, double speed, std::vector<double>* cap) {
  const int n = static_cast<int>(ring.size());
  for (int i = 0; i < n; ++i)
    for (int l : finder.hop(ring[i], ring[(i + 1) % n]).links) (*cap)[l] -= speed;
}

std::vector<std::vector<int>> pack(RingFinder& finder, const std::vector<int>& first, PathClass limit, double speed,
                                   const std::vector<double>& full, int maxRings) {
  std::vector<double> cap = full;
  std::vector<std::vector<int>> rings;
  std::vector<int> ring = first;
  while (static_cast<int>(rings.size()) < maxRings) {
    Score s;
    if (!finder.evaluate(ring, cap, &s) || !atLeast(s.bw, speed)) {
      if (!finder.best(cap, speed, limit, &ring, &s)) break;
    }
    consume(finder, ring, speed, &cap);
    rings.push_back(ring);
  }
  return rings;
}

ncclResult_t checkRanks(const Topology& topo, const std::vector<int>& rankGpu, int maxRings) {
  if (rankGpu.empty()) return recordError(ncclInvalidArgument, "searchRings: no ranks");
  if (maxRings < 1) return recordError(ncclInvalidArgument, "searchRings: maxRings %d (at least 1)", maxRings);
  const int nodes = static_cast<int>(topo.nodes.size());
  for (size_t r = 0; r < rankGpu.size(); ++r) {
    const int g = rankGpu[r];
    if (g < 0 || g >= nodes || topo.nodes[g].kind != TopoKind::Gpu)
      return recordError(ncclInvalidArgument, "searchRings: rank %zu's node %d is no GPU of the topology", r, g);
    for (size_t q = 0; q < r; ++q)
      if (rankGpu[q] == g)
        return recordError(ncclInvalidArgument, "searchRings: ranks %zu and %zu are both on GPU node %d", q, r, g);
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t searchRings(const Topology& topo, const TopoPaths& paths, const std::vector<int>& rankGpu, int maxRings,
                         TopoRings* out) {
  BRAID_CHECK(checkRanks(topo, rankGpu, maxRings));
  maxRings = std::min(maxRings, kMaxRings);
  const int n = static_cast<int>(rankGpu.size());
  const double chanCap = channelCap(topo, rankGpu);
  TopoRings result;
  std::vector<int> rankOrder(n);
  for (int r = 0; r < n; ++r) rankOrder[r] = r;
  if (n == 1) {  // no hop: one ring, moving what a channel moves
    result.rings.assign(1, rankOrder);
    result.bwPerRing = chanCap;
    *out = std::move(result);
    return ncclSuccess;
  }

  Links links;
  std::vector<Hop> hops(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const TopoPath& p = paths.between(rankGpu[a], rankGpu[b]);
      Hop& h = hops[a * n + b];
      if (a == b || p.cls == PathClass::Dis || p.route.size() < 2) continue;
      h.ok = true;
      h.cls = p.cls;
      for (size_t i = 0; i + 1 < p.route.size(); ++i) {
        const int from = p.route[i], to = p.route[i + 1];
        if (from < 0 || to < 0 || from >= static_cast<int>(topo.nodes.size()) ||
            to >= static_cast<int>(topo.nodes.size()))
          return recordError(ncclInvalidArgument, "searchRings: the paths name node %d, not in the topology",
                             from < 0 || from >= static_cast<int>(topo.nodes.size()) ? from : to);
        h.links.push_back(links.id(topo, from, to));
      }
    }
  }
  const std::vector<double> full = links.bandwidths();
  RingFinder finder(n, std::move(hops));

  std::vector<int> first;
  Score firstScore;
  if (!finder.best(full, 0, PathClass::Dis, &first, &firstScore)) {
    // Some pair of GPUs has no path: NCCL falls back to rank order too.
    result.rings.assign(1, rankOrder);
    result.bwPerRing = 0;
    result.worst = PathClass::Dis;
    *out = std::move(result);
    return ncclSuccess;
  }

  const double top = std::min(firstScore.bw, chanCap);
  double bestTotal = 0;
  for (int k = 1; k <= maxRings; ++k) {
    const double speed = top / k;
    if (maxRings * speed <= bestTotal * (1 + kEps)) break;  // even maxRings rings at this speed carry no more
    std::vector<std::vector<int>> rings = pack(finder, first, firstScore.worst, speed, full, maxRings);
    const double total = rings.size() * speed;
    if (total > bestTotal * (1 + kEps)) {
      bestTotal = total;
      result.rings = std::move(rings);
      result.bwPerRing = speed;
    }
  }
  result.worst = firstScore.worst;
  *out = std::move(result);
  return ncclSuccess;
}

int ringChannelsFor(double slowestGBs, int most) {
  constexpr double kChannelGBs = 5.0;
  constexpr int kMinChannels = 4;
  if (!(slowestGBs > 0)) return std::max(1, most);
  const double fed = std::ceil(slowestGBs / kChannelGBs);
  const int n = fed > most ? most : std::max(kMinChannels, static_cast<int>(fed));
  return std::max(1, std::min(n, most));
}

XmlNode ringsGraphXml(const TopoRings& rings, const std::vector<int>& rankGpu, const Topology& topo, bool throughNics) {
  std::vector<int> dev(rankGpu.size(), -1);
  for (size_t r = 0; r < rankGpu.size(); ++r) dev[r] = graphGpuDev(topo, rankGpu[r]);
  // A ring enters and leaves the host through the NICs nearest its first and last GPUs, spread over channels as
  // NCCL spreads them; a host without NICs has no <net> elements.
  TopoPaths paths;
  bool haveNets = false;
  for (const TopoNode& v : topo.nodes) haveNets |= throughNics && v.kind == TopoKind::Net;
  if (haveNets && computePaths(topo, &paths) != ncclSuccess) haveNets = false;
  auto netOf = [&](int rank, size_t channel, PathClass* cls) {
    if (rank < 0 || rank >= static_cast<int>(rankGpu.size())) return -1;
    return graphNetDev(topo, paths, rankGpu[rank], channel, cls);
  };
  TopoGraph g;
  g.id = 0;
  g.pattern = kGraphPatternRing;
  g.speedIntra = g.speedInter = rings.bwPerRing;
  g.typeIntra = rings.worst;
  g.typeInter = PathClass::Pix;  // NCCL's starting typeinter, kept when the rings use no NIC
  for (size_t c = 0; c < rings.rings.size(); ++c) {
    const std::vector<int>& ring = rings.rings[c];
    GraphChannel ch;
    if (haveNets && !ring.empty()) {
      ch.netIn = netOf(ring.front(), c, &g.typeInter);
      ch.netOut = netOf(ring.back(), c, &g.typeInter);
      g.crossNic |= ch.netIn != ch.netOut;
    }
    for (int r : ring) ch.gpus.push_back(r >= 0 && r < static_cast<int>(dev.size()) ? dev[r] : -1);
    g.channels.push_back(std::move(ch));
  }
  return graphsXml({g});
}

int graphGpuDev(const Topology& topo, int gpu) {
  if (gpu < 0 || gpu >= static_cast<int>(topo.nodes.size())) return -1;
  if (topo.nodes[gpu].cudaDev >= 0) return topo.nodes[gpu].cudaDev;
  int dev = 0;  // unknown: the GPU's place among the topology's GPUs
  for (int v = 0; v < gpu; ++v) dev += topo.nodes[v].kind == TopoKind::Gpu;
  return dev;
}

int graphNetDev(const Topology& topo, const TopoPaths& paths, int gpu, size_t channel, PathClass* cls) {
  if (gpu < 0) return -1;
  const std::vector<int> near = nearestNets(topo, paths, gpu);
  if (near.empty()) return -1;
  const int net = near[channel % near.size()];
  *cls = std::max(*cls, paths.between(gpu, net).cls);
  return topo.nodes[net].dev;
}

}  // namespace braid
