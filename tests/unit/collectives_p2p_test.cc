// Point-to-point on the host executor (send/recv in any order, several messages per peer, self
// send/recv, all-to-all, gather, scatter), mixed batches of collectives and p2p in one run, and
// failures: broken connections, mismatched counts, a silent peer (timeout) and abort, each reported with
// an error naming the peer instead of a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <mutex>

#include "collectives_test_util.h"

namespace braid {
namespace {
using namespace testing_util;

uint8_t patternByte(int src, int dst, int msg, size_t i) {
  return uint8_t((src * 131 + dst * 71 + msg * 29 + i * 7 + (i >> 8)) & 0xff);
}
size_t msgBytes(int src, int dst, int msg) {
  const size_t sizes[] = {0, 1, 255, 256, 257, 3000, 4 * 256 * 3 + 5};
  return sizes[(src * 3 + dst * 5 + msg) % 7];
}

std::string firstLines(std::mutex& mu, std::vector<std::string>& v) {
  std::lock_guard<std::mutex> lk(mu);
  std::string s;
  for (size_t i = 0; i < v.size() && i < 10; ++i) s += v[i] + "\n";
  return s;
}

// Every rank sends two messages to every other rank and receives two from each, in rank-dependent orders
// (sends ascending from rank+1, receives descending, or the reverse), all in one batch.
TEST(HostP2p, AllPairsInAnyOrder) {
  for (int n = 1; n <= 5; ++n) {
    MemWorld world(n, 1, 256, 4);
    std::mutex mu;
    std::vector<std::string> errs;
    runRanks(&world, 1, 30, [&](int rank, HostExecutor& ex, MemProvider& prov) {
      std::vector<std::vector<uint8_t>> sendBufs, recvBufs;
      std::vector<OpDesc> ops;
      std::vector<std::tuple<int, int, size_t>> recvMeta;  // (src, msg, index into recvBufs)
      sendBufs.reserve(4 * n);
      recvBufs.reserve(4 * n);
      for (int k = 1; k < n; ++k) {
        const int sendTo = (rank % 2 == 0) ? (rank + k) % n : (rank - k + n) % n;
        const int recvFrom = (rank % 2 == 0) ? (rank - k + n) % n : (rank + k) % n;
        for (int msg = 0; msg < 2; ++msg) {
          sendBufs.emplace_back(msgBytes(rank, sendTo, msg) + 1);
          for (size_t i = 0; i < msgBytes(rank, sendTo, msg); ++i) sendBufs.back()[i] = patternByte(rank, sendTo, msg, i);
          OpDesc s;
          s.coll = CollType::Send;
          s.sendbuff = sendBufs.back().data();
          s.count = msgBytes(rank, sendTo, msg);
          s.dtype = ncclUint8;
          s.peer = sendTo;
          recvBufs.emplace_back(msgBytes(recvFrom, rank, msg) + 1, 0xA5);
          recvMeta.emplace_back(recvFrom, msg, recvBufs.size() - 1);
          OpDesc r;
          r.coll = CollType::Recv;
          r.recvbuff = recvBufs.back().data();
          r.count = msgBytes(recvFrom, rank, msg);
          r.dtype = ncclUint8;
          r.peer = recvFrom;
          // Odd ranks post their receives first.
          if (rank % 2) {
            ops.push_back(r);
            ops.push_back(s);
          } else {
            ops.push_back(s);
            ops.push_back(r);
          }
        }
      }
      ncclResult_t res = ex.run(ops);
      std::lock_guard<std::mutex> lk(mu);
      if (res != ncclSuccess) {
        errs.push_back("n=" + std::to_string(n) + " rank " + std::to_string(rank) + ": " + pendingError());
        return;
      }
      if (n > 1 && prov.connectCalls != 1) errs.push_back("connectP2p calls: " + std::to_string(prov.connectCalls));
      if (n > 1 && (int(prov.lastSendPeers.size()) != n - 1 || int(prov.lastRecvPeers.size()) != n - 1))
        errs.push_back("connectP2p peers do not list every other rank once");
      for (auto& m : recvMeta) {
        const int src = std::get<0>(m), msg = std::get<1>(m);
        const auto& buf = recvBufs[std::get<2>(m)];
        const size_t bytes = msgBytes(src, rank, msg);
        for (size_t i = 0; i < bytes; ++i) {
          if (buf[i] != patternByte(src, rank, msg, i)) {
            errs.push_back("n=" + std::to_string(n) + " rank " + std::to_string(rank) + " from " + std::to_string(src) +
                           " msg " + std::to_string(msg) + " byte " + std::to_string(i));
            break;
          }
        }
        if (buf[bytes] != 0xA5) errs.push_back("receive overran its buffer");
      }
    });
    EXPECT_TRUE(errs.empty()) << firstLines(mu, errs);
  }
}

TEST(HostP2p, SendRecvToSelf) {
  MemWorld world(2, 1, 256, 4);
  runRanks(&world, 1, 30, [&](int rank, HostExecutor& ex, MemProvider& prov) {
    std::vector<int32_t> a(1000), b(1000, -1), c(3, 7), d(3, 0);
    for (int i = 0; i < 1000; ++i) a[i] = i * (rank + 1);
    std::vector<OpDesc> ops(4);
    ops[0].coll = CollType::Recv, ops[0].recvbuff = b.data(), ops[0].count = 1000, ops[0].dtype = ncclInt32, ops[0].peer = rank;
    ops[1].coll = CollType::Send, ops[1].sendbuff = a.data(), ops[1].count = 1000, ops[1].dtype = ncclInt32, ops[1].peer = rank;
    ops[2].coll = CollType::Send, ops[2].sendbuff = c.data(), ops[2].count = 3, ops[2].dtype = ncclInt32, ops[2].peer = rank;
    ops[3].coll = CollType::Recv, ops[3].recvbuff = d.data(), ops[3].count = 3, ops[3].dtype = ncclInt32, ops[3].peer = rank;
    EXPECT_EQ(ex.run(ops), ncclSuccess) << pendingError();
    EXPECT_EQ(a, b);
    EXPECT_EQ(c, d);
    EXPECT_EQ(prov.connectCalls, 0);  // self needs no connection
  });
}

// All-to-all, gather and scatter for 1..5 ranks, several sizes and types.
TEST(HostP2p, AllToAllGatherScatter) {
  const ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64};
  for (int n = 1; n <= 5; ++n) {
    MemWorld world(n, 1, 256, 4);
    std::mutex mu;
    std::vector<std::string> errs;
    runRanks(&world, 1, 30, [&](int rank, HostExecutor& ex, MemProvider&) {
      auto fail = [&](const std::string& m) {
        std::lock_guard<std::mutex> lk(mu);
        errs.push_back("n=" + std::to_string(n) + " rank " + std::to_string(rank) + ": " + m);
      };
      for (ncclDataType_t dt : types) {
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1031)}) {
          const size_t es = dtypeSize(dt), bytes = count * es;
          auto val = [&](int src, int dst, size_t b) { return uint8_t(src * 37 + dst * 11 + b * 3 + (b >> 8)); };
          for (int kind = 0; kind < 3; ++kind) {
            const int root = int(count % n);
            std::vector<uint8_t> send(std::max<size_t>(n * bytes, 1)), recv(std::max<size_t>(n * bytes, 1), 0xA5);
            OpDesc op;
            op.dtype = dt;
            op.count = count;
            op.root = root;
            op.sendbuff = send.data();
            op.recvbuff = recv.data();
            if (kind == 0) {  // all-to-all: block p of my send goes to p
              op.coll = CollType::AllToAll;
              for (int p = 0; p < n; ++p)
                for (size_t b = 0; b < bytes; ++b) send[p * bytes + b] = val(rank, p, b);
            } else if (kind == 1) {
              op.coll = CollType::Gather;
              for (size_t b = 0; b < bytes; ++b) send[b] = val(rank, root, b);
            } else {
              op.coll = CollType::Scatter;
              for (int p = 0; p < n; ++p)
                for (size_t b = 0; b < bytes; ++b) send[p * bytes + b] = val(rank, p, b);
            }
            if (ex.run({op}) != ncclSuccess) {
              fail(std::string(collName(op.coll)) + " failed: " + pendingError());
              return;
            }
            bool ok = true;
            if (kind == 0 || (kind == 1 && rank == root)) {
              for (int p = 0; p < n && ok; ++p)
                for (size_t b = 0; b < bytes && ok; ++b) ok = recv[p * bytes + b] == val(p, rank, b);
            } else if (kind == 2) {
              for (size_t b = 0; b < bytes && ok; ++b) ok = recv[b] == val(root, rank, b);
              for (size_t b = bytes; b < n * bytes && ok; ++b) ok = recv[b] == 0xA5;
            } else {
              for (size_t b = 0; b < n * bytes && ok; ++b) ok = recv[b] == 0xA5;  // non-root gather: untouched
            }
            if (!ok) fail(std::string(collName(op.coll)) + " " + dtypeName(dt) + " count " + std::to_string(count));
          }
        }
      }
    });
    EXPECT_TRUE(errs.empty()) << firstLines(mu, errs);
  }
}

// Several collectives and p2p ops in one run, on 2 channels: collectives in issue order, p2p after.
TEST(HostExecutorBatch, MixedCollectivesAndP2p) {
  for (int n : {2, 3, 5}) {
    MemWorld world(n, 2, 256, 4);
    std::mutex mu;
    std::vector<std::string> errs;
    runRanks(&world, 2, 30, [&](int rank, HostExecutor& ex, MemProvider&) {
      const size_t count = 777;
      std::vector<float> ar(count), arOut(count, -1);
      std::vector<int32_t> agIn(count), agOut(count * n, -1);
      std::vector<uint16_t> rsIn(count * n), rsOut(count, 0xffff);
      std::vector<double> bc(count), p2pOut(count, -1), p2pIn(count);
      for (size_t i = 0; i < count; ++i) {
        ar[i] = float(rank + 1) * float(i % 5);
        agIn[i] = int32_t(rank * 100000 + i);
        bc[i] = rank == 0 ? double(i) * 0.5 : -7.0;
        p2pIn[i] = rank * 1000.0 + i;
      }
      for (size_t i = 0; i < count * n; ++i) rsIn[i] = floatToHalfBits(float((i + rank) % 4));
      std::vector<OpDesc> ops(6);
      ops[0].coll = CollType::AllReduce, ops[0].sendbuff = ar.data(), ops[0].recvbuff = arOut.data(), ops[0].count = count, ops[0].dtype = ncclFloat32;
      ops[1].coll = CollType::Send, ops[1].sendbuff = p2pIn.data(), ops[1].count = count, ops[1].dtype = ncclFloat64, ops[1].peer = (rank + 1) % n;
      ops[2].coll = CollType::AllGather, ops[2].sendbuff = agIn.data(), ops[2].recvbuff = agOut.data(), ops[2].count = count, ops[2].dtype = ncclInt32;
      ops[3].coll = CollType::Recv, ops[3].recvbuff = p2pOut.data(), ops[3].count = count, ops[3].dtype = ncclFloat64, ops[3].peer = (rank - 1 + n) % n;
      ops[4].coll = CollType::ReduceScatter, ops[4].sendbuff = rsIn.data(), ops[4].recvbuff = rsOut.data(), ops[4].count = count, ops[4].dtype = ncclFloat16;
      ops[5].coll = CollType::Broadcast, ops[5].sendbuff = bc.data(), ops[5].recvbuff = bc.data(), ops[5].count = count, ops[5].dtype = ncclFloat64, ops[5].root = 0;
      ncclResult_t res = ex.run(ops);
      std::lock_guard<std::mutex> lk(mu);
      if (res != ncclSuccess) {
        errs.push_back("rank " + std::to_string(rank) + ": " + pendingError());
        return;
      }
      const int prev = (rank - 1 + n) % n;
      for (size_t i = 0; i < count; ++i) {
        const float wantAr = float(n * (n + 1) / 2) * float(i % 5);
        float wantRs = 0;
        for (int r = 0; r < n; ++r) wantRs += float((rank * count + i + r) % 4);
        if (arOut[i] != wantAr || halfBitsToFloat(rsOut[i]) != wantRs || bc[i] != double(i) * 0.5 ||
            p2pOut[i] != prev * 1000.0 + i) {
          errs.push_back("n=" + std::to_string(n) + " rank " + std::to_string(rank) + " element " + std::to_string(i));
          break;
        }
      }
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i)
          if (agOut[r * count + i] != int32_t(r * 100000 + i)) {
            errs.push_back("allgather n=" + std::to_string(n) + " rank " + std::to_string(rank));
            r = n;
            break;
          }
    });
    EXPECT_TRUE(errs.empty()) << firstLines(mu, errs);
  }
}

// ---- failures ----

struct Outcome {
  ncclResult_t res = ncclSuccess;
  std::string msg;
};

// Runs `ops(rank)` on every rank (ranks for which skip(rank) is true run nothing) and collects outcomes.
std::vector<Outcome> runAndCollect(MemWorld& world, int nch, double timeout,
                                   const std::function<std::vector<OpDesc>(int)>& ops,
                                   const std::function<bool(int)>& skip = nullptr,
                                   const std::atomic<uint32_t>* abortFlag = nullptr) {
  std::vector<Outcome> out(world.nranks());
  const int n = world.nranks();
  std::vector<std::thread> threads;
  WaitContext wait;
  wait.timeoutSec = timeout;
  wait.abortFlag = abortFlag;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      if (skip && skip(r)) return;
      MemProvider prov(&world, r);
      HostExecutor ex(&prov, &wait, r, n, nch);
      out[r].res = ex.run(ops(r));
      out[r].msg = pendingError();
      clearPendingError();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

OpDesc allReduceOf(std::vector<float>& buf, size_t count) {
  OpDesc op;
  op.coll = CollType::AllReduce;
  op.sendbuff = buf.data();
  op.recvbuff = buf.data();
  op.count = count;
  op.dtype = ncclFloat32;
  return op;
}

TEST(HostExecutorErrors, BrokenConnectionNamesPeer) {
  for (int nch : {1, 3}) {
    MemWorld world(2, nch, 256, 4);
    world.ring(nch - 1, 1)->errorFlag = 1;  // rank 1 -> rank 0 on the last channel broke
    std::vector<std::vector<float>> bufs(2, std::vector<float>(10000, 1.0f));
    auto start = std::chrono::steady_clock::now();
    auto out = runAndCollect(world, nch, 2.0, [&](int r) { return std::vector<OpDesc>{allReduceOf(bufs[r], 10000)}; });
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_EQ(out[0].res, ncclRemoteError) << "nch " << nch;
    EXPECT_NE(out[0].msg.find("rank 1"), std::string::npos) << out[0].msg;
    EXPECT_NE(out[0].msg.find("broke"), std::string::npos) << out[0].msg;
    EXPECT_NE(out[1].res, ncclSuccess);  // rank 1 cannot finish without rank 0: it times out, naming rank 0
    EXPECT_NE(out[1].msg.find("rank 0"), std::string::npos) << out[1].msg;
  }
}

TEST(HostExecutorErrors, MismatchedCountsAreReported) {
  MemWorld world(2, 1, 256, 4);
  std::vector<std::vector<float>> bufs(2, std::vector<float>(64, 1.0f));
  auto out = runAndCollect(world, 1, 1.0, [&](int r) { return std::vector<OpDesc>{allReduceOf(bufs[r], r == 0 ? 64 : 60)}; });
  const bool usage = out[0].res == ncclInvalidUsage || out[1].res == ncclInvalidUsage;
  EXPECT_TRUE(usage) << out[0].msg << " | " << out[1].msg;
  const std::string& m = out[0].res == ncclInvalidUsage ? out[0].msg : out[1].msg;
  EXPECT_NE(m.find("different counts"), std::string::npos) << m;
}

TEST(HostExecutorErrors, P2pSizeMismatch) {
  MemWorld world(2, 1, 256, 4);
  std::vector<uint8_t> a(100, 1), b(100, 0);
  auto out = runAndCollect(world, 1, 1.0, [&](int r) {
    OpDesc op;
    op.dtype = ncclUint8;
    op.peer = 1 - r;
    if (r == 0) {
      op.coll = CollType::Send, op.sendbuff = a.data(), op.count = 100;
    } else {
      op.coll = CollType::Recv, op.recvbuff = b.data(), op.count = 90;
    }
    return std::vector<OpDesc>{op};
  });
  EXPECT_EQ(out[0].res, ncclSuccess) << out[0].msg;  // the sender's steps fit in the FIFO
  EXPECT_EQ(out[1].res, ncclInvalidUsage);
  EXPECT_NE(out[1].msg.find("rank 0"), std::string::npos) << out[1].msg;
}

TEST(HostExecutorErrors, SilentPeerTimesOut) {
  MemWorld world(3, 2, 256, 4);
  std::vector<std::vector<float>> bufs(3, std::vector<float>(5000, 1.0f));
  auto start = std::chrono::steady_clock::now();
  auto out = runAndCollect(world, 2, 0.5, [&](int r) { return std::vector<OpDesc>{allReduceOf(bufs[r], 5000)}; },
                           [](int r) { return r == 2; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(out[0].res, ncclRemoteError);  // waits on rank 2 (its ring predecessor)
  EXPECT_NE(out[0].msg.find("rank 2"), std::string::npos) << out[0].msg;
  EXPECT_NE(out[0].msg.find("timed out"), std::string::npos) << out[0].msg;
  EXPECT_EQ(out[1].res, ncclRemoteError);
}

TEST(HostExecutorErrors, P2pSilentPeerTimesOut) {
  MemWorld world(2, 1, 256, 4);
  std::vector<uint8_t> buf(10);
  auto out = runAndCollect(world, 1, 0.5, [&](int r) {
    OpDesc op;
    op.coll = CollType::Recv, op.recvbuff = buf.data(), op.count = 10, op.dtype = ncclUint8, op.peer = 1;
    return std::vector<OpDesc>{op};
  }, [](int r) { return r == 1; });
  EXPECT_EQ(out[0].res, ncclRemoteError);
  EXPECT_NE(out[0].msg.find("rank 1"), std::string::npos) << out[0].msg;
}

TEST(HostExecutorErrors, AbortStopsWaiting) {
  MemWorld world(2, 1, 256, 4);
  std::atomic<uint32_t> abortFlag{0};
  std::vector<std::vector<float>> bufs(2, std::vector<float>(5000, 1.0f));
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abortFlag.store(1);
  });
  auto start = std::chrono::steady_clock::now();
  auto out = runAndCollect(world, 1, 60, [&](int r) { return std::vector<OpDesc>{allReduceOf(bufs[r], 5000)}; },
                           [](int r) { return r == 1; }, &abortFlag);
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(out[0].res, ncclSuccess);
  EXPECT_NE(out[0].msg.find("abort"), std::string::npos) << out[0].msg;
}

TEST(HostExecutorErrors, UnsupportedOpIsInvalidArgument) {
  MemWorld world(1, 1, 256, 4);
  std::vector<float> buf(4, 1.0f);
  auto out = runAndCollect(world, 1, 1.0, [&](int) {
    OpDesc op = allReduceOf(buf, 4);
    op.op.kind = RedKind::SumPostDiv;  // integer-only
    return std::vector<OpDesc>{op};
  });
  EXPECT_EQ(out[0].res, ncclInvalidArgument);
  EXPECT_NE(out[0].msg.find("float32"), std::string::npos) << out[0].msg;
}

}  // namespace
}  // namespace braid
