// ConnectionManager over a real Bootstrap, ranks as threads: ring connections on several channels and
// point-to-point connections (including to self and repeated peers) for 1..4 ranks, over SHM and over
// sockets, each pumped with the ConnInfo protocol; abort marks connections broken on both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/result.h"
#include "transport/transport.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::EnvVar;
using testutil::waitFlag;

struct MRank {
  int rank = -1;
  int nranks = 0;
  std::atomic<uint32_t> abortFlag{0};
  PeerInfo self{};
  WaitContext wait;
  std::unique_ptr<Bootstrap> boot;
  std::unique_ptr<ConnectionManager> cm;
  std::mutex errMu;
  std::string err;

  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lk(errMu);
    if (err.empty()) err = "rank " + std::to_string(rank) + ": " + what;
  }
};

// Starts `n` ranks as threads with a bootstrap and a ConnectionManager each, runs `body`, then a
// bootstrap barrier (so no rank closes while a peer still receives) and teardown. Returns the failures.
std::string runRanks(int n, const std::function<void(MRank&)>& body) {
  ncclUniqueId id;
  if (bootstrapGetUniqueId(&id) != ncclSuccess) return "bootstrapGetUniqueId: " + pendingError();
  std::vector<std::unique_ptr<MRank>> ranks;
  for (int r = 0; r < n; r++) {
    auto m = std::make_unique<MRank>();
    m->rank = r;
    m->nranks = n;
    fillLocalPeerInfo(&m->self);
    m->self.rank = r;
    m->self.cudaDev = -1;
    m->self.busId = -1;
    m->self.isHost = 1;
    m->wait.abortFlag = &m->abortFlag;
    m->wait.timeoutSec = 20;
    m->wait.self = &m->self;
    m->wait.commName = "transport_manager_test";
    ranks.push_back(std::move(m));
  }
  std::vector<std::thread> threads;
  for (auto& up : ranks) {
    MRank* m = up.get();
    threads.emplace_back([m, &id, &body] {
      clearPendingError();
      if (Bootstrap::create(id, m->rank, m->nranks, m->self, &m->wait, &m->boot) != ncclSuccess) {
        m->fail("bootstrap: " + pendingError());
        return;
      }
      m->wait.peers = &m->boot->peers();
      m->cm = std::make_unique<ConnectionManager>(&m->wait, m->boot.get(), &m->self, &m->boot->peers());
      body(*m);
      if (m->boot->barrier() != ncclSuccess) m->fail("final barrier: " + pendingError());
      m->cm.reset();
      m->boot->close();
    });
  }
  for (auto& t : threads) t.join();
  std::string all;
  for (auto& m : ranks) {
    if (!m->err.empty()) all += m->err + "\n";
  }
  return all;
}

// Pumps every listed (send, recv) connection at once; seeds tie each byte to its sender.
void pumpAll(MRank& m, const std::vector<std::pair<ConnInfo, uint32_t>>& sends,
             const std::vector<std::pair<ConnInfo, uint32_t>>& recvs, uint64_t steps) {
  std::vector<std::thread> ts;
  for (auto& s : sends) {
    ts.emplace_back([&m, s, steps] {
      std::string e = testutil::sendSteps(s.first, s.second, steps);
      if (!e.empty()) m.fail(e);
    });
  }
  for (auto& r : recvs) {
    ts.emplace_back([&m, r, steps] {
      std::string e = testutil::recvSteps(r.first, r.second, steps);
      if (!e.empty()) m.fail(e);
    });
  }
  for (auto& t : ts) t.join();
}

uint32_t ringSeed(int sender, int channel) { return static_cast<uint32_t>(sender * 16 + channel); }
uint32_t p2pSeed(int sender, int receiver) { return static_cast<uint32_t>(1000 + sender * 16 + receiver); }

void ringAndP2p(MRank& m, const char* expectTransport) {
  const int n = m.nranks, r = m.rank, next = (r + 1) % n, prev = (r - 1 + n) % n;
  const int nChannels = 2;
  if (m.cm->connectRing(nChannels) != ncclSuccess) return m.fail("connectRing: " + pendingError());
  if (m.cm->ringChannels() != nChannels) return m.fail("ringChannels");
  if (std::string(m.cm->transportName(next)) != expectTransport) {
    return m.fail(std::string("transport to next is ") + m.cm->transportName(next));
  }
  if (m.cm->ringSend(nChannels) != nullptr) return m.fail("ringSend past the last channel");
  std::vector<std::pair<ConnInfo, uint32_t>> sends, recvs;
  for (int c = 0; c < nChannels; c++) {
    ConnInfo* s = m.cm->ringSend(c);
    ConnInfo* rv = m.cm->ringRecv(c);
    if (!s || !rv || s->peer != next || rv->peer != prev) return m.fail("ring connector peers");
    sends.push_back({*s, ringSeed(r, c)});
    recvs.push_back({*rv, ringSeed(prev, c)});
  }
  pumpAll(m, sends, recvs, 300);

  // Point-to-point: to self, to the next two ranks (duplicates in the lists and with n < 3 are skipped).
  std::vector<int> sendTo = {r, next, (r + 2) % n, next};
  std::vector<int> recvFrom = {r, prev, (r - 2 + 2 * n) % n, prev};
  if (m.cm->connectP2p(sendTo.data(), static_cast<int>(sendTo.size()), recvFrom.data(),
                       static_cast<int>(recvFrom.size())) != ncclSuccess) {
    return m.fail("connectP2p: " + pendingError());
  }
  ConnInfo* firstSend = m.cm->p2pSend(next);
  // Again: everything is connected already, so nothing is exchanged and nothing changes.
  if (m.cm->connectP2p(sendTo.data(), static_cast<int>(sendTo.size()), recvFrom.data(),
                       static_cast<int>(recvFrom.size())) != ncclSuccess) {
    return m.fail("connectP2p again: " + pendingError());
  }
  if (m.cm->p2pSend(next) != firstSend) return m.fail("p2p connector replaced");
  if (n > 1 && m.cm->p2pSend(next) == m.cm->ringSend(0)) return m.fail("p2p shares the ring connector");
  sends.clear();
  recvs.clear();
  std::vector<int> uniqSend, uniqRecv;
  for (int p : sendTo) {
    if (std::find(uniqSend.begin(), uniqSend.end(), p) == uniqSend.end()) uniqSend.push_back(p);
  }
  for (int p : recvFrom) {
    if (std::find(uniqRecv.begin(), uniqRecv.end(), p) == uniqRecv.end()) uniqRecv.push_back(p);
  }
  for (int p : uniqSend) {
    ConnInfo* c = m.cm->p2pSend(p);
    if (!c || c->peer != p) return m.fail("p2pSend(" + std::to_string(p) + ") missing");
    sends.push_back({*c, p2pSeed(r, p)});
  }
  for (int p : uniqRecv) {
    ConnInfo* c = m.cm->p2pRecv(p);
    if (!c || c->peer != p) return m.fail("p2pRecv(" + std::to_string(p) + ") missing");
    recvs.push_back({*c, p2pSeed(p, r)});
  }
  if (m.cm->p2pSend((r + 3) % n) && n > 3) return m.fail("unexpected p2p connection");
  pumpAll(m, sends, recvs, 200);
}

class ManagerTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(ManagerTest, RingAndP2p) {
  const int n = std::get<0>(GetParam());
  const bool shm = std::get<1>(GetParam());
  EnvVar buff("NCCL_BUFFSIZE", "65536");
  EnvVar shmOff("NCCL_SHM_DISABLE", shm ? "0" : "1");
  EXPECT_EQ(runRanks(n, [&](MRank& m) { ringAndP2p(m, shm ? "SHM" : "NET"); }), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ManagerTest, ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& i) {
                           return std::to_string(std::get<0>(i.param)) + "ranks_" +
                                  (std::get<1>(i.param) ? "shm" : "net");
                         });

// A ring per channel (connectRings): 4 ranks, rings 0,1,2,3 and 0,2,1,3 alternating over 3 channels; each channel's
// connections go to its own ring's neighbours and carry their sender's bytes. More channels later must follow the
// same rings; a call naming other neighbours for a connected channel fails.
void ringsPerChannel(MRank& m) {
  const std::vector<std::vector<int>> rings = {{0, 1, 2, 3}, {0, 2, 1, 3}};
  const int n = m.nranks, r = m.rank;
  std::vector<int> next, prev;
  for (const std::vector<int>& ring : rings) {
    const int pos = static_cast<int>(std::find(ring.begin(), ring.end(), r) - ring.begin());
    next.push_back(ring[(pos + 1) % n]);
    prev.push_back(ring[(pos - 1 + n) % n]);
  }
  if (m.cm->connectRings(3, next, prev) != ncclSuccess) return m.fail("connectRings: " + pendingError());
  if (m.cm->connectRings(4, next, prev) != ncclSuccess) return m.fail("connectRings, more: " + pendingError());
  std::vector<std::pair<ConnInfo, uint32_t>> sends, recvs;
  for (int c = 0; c < 4; ++c) {
    const int to = next[c % 2], from = prev[c % 2];
    if (m.cm->ringSendPeer(c) != to || m.cm->ringRecvPeer(c) != from)
      return m.fail("channel " + std::to_string(c) + " peers " + std::to_string(m.cm->ringSendPeer(c)) + "/" +
                    std::to_string(m.cm->ringRecvPeer(c)));
    ConnInfo* s = m.cm->ringSend(c);
    ConnInfo* rv = m.cm->ringRecv(c);
    if (!s || !rv || s->peer != to || rv->peer != from)
      return m.fail("ring connector peers, channel " + std::to_string(c));
    sends.push_back({*s, ringSeed(r, c)});
    recvs.push_back({*rv, ringSeed(from, c)});
  }
  if (m.cm->ringSendPeer(4) != -1) return m.fail("a peer past the last channel");
  pumpAll(m, sends, recvs, 200);
  // Rank order on every channel is another ring for ranks whose ring-1 neighbours differ: refused, nothing changes.
  clearPendingError();
  const ncclResult_t again = m.cm->connectRing(4);
  const bool differs = next[1] != (r + 1) % n || prev[1] != (r - 1 + n) % n;
  if (differs && again != ncclInternalError) return m.fail("another ring on connected channels was accepted");
  if (differs && pendingError().find("already runs another ring") == std::string::npos)
    return m.fail("message: " + pendingError());
  if (!differs && again != ncclSuccess) return m.fail("the same rings were refused: " + pendingError());
  clearPendingError();
}

class RingsTest : public ::testing::TestWithParam<bool> {};

TEST_P(RingsTest, EachChannelOnItsOwnRing) {
  const bool shm = GetParam();
  EnvVar buff("NCCL_BUFFSIZE", "65536");
  EnvVar shmOff("NCCL_SHM_DISABLE", shm ? "0" : "1");
  EXPECT_EQ(runRanks(4, ringsPerChannel), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, RingsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Shm" : "Sockets"; });

class AbortTest : public ::testing::TestWithParam<bool> {};

TEST_P(AbortTest, AbortBreaksConnectionsOnBothSides) {
  const bool shm = GetParam();
  EnvVar shmOff("NCCL_SHM_DISABLE", shm ? "0" : "1");
  EXPECT_EQ(runRanks(2,
                     [&](MRank& m) {
                       if (m.cm->connectRing(1) != ncclSuccess) return m.fail("connectRing: " + pendingError());
                       ConnInfo recv = *m.cm->ringRecv(0);
                       if (m.rank == 0) {
                         auto t0 = std::chrono::steady_clock::now();
                         m.cm->abort();
                         if (!loadAcquire32(m.cm->ringSend(0)->errorFlag) || !loadAcquire32(recv.errorFlag))
                           m.fail("own flags not set");
                         m.cm.reset();
                         if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) m.fail("abort slow");
                       }
                       if (m.boot->barrier() != ncclSuccess) return m.fail("barrier: " + pendingError());
                       if (m.rank == 1 && !waitFlag(recv.errorFlag, 5)) m.fail("peer's recv errorFlag not set");
                     }),
            "");
}

INSTANTIATE_TEST_SUITE_P(Transports, AbortTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "shm" : "net"; });

}  // namespace
}  // namespace braid
