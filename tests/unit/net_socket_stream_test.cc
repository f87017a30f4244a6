// The socket backend's message stream, exercised directly (no proxy): frames that arrive together are read ahead
// in one recv and handed out in order, whatever their sizes (empty, a few bytes, around the read-ahead's size,
// large and split over several sockets). Every byte is checked, as are the sizes, the flags and that nothing lands
// past a message's end in its buffer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "transport/net/net_backend.h"
#include "transport/net/net_socket.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::EnvVar;

constexpr unsigned char kPoison = 0xEE;

struct Pair {
  std::unique_ptr<NetSendComm> send;
  std::unique_ptr<NetRecvComm> recv;
};

// A connected sender -> receiver pair of the socket backend (BRAID_NSOCKS_PERPEER sockets, read at listen).
void connectSocketPair(Pair* out) {
  NetBackend* be = socketNetBackend();
  NetHandle h;
  std::unique_ptr<NetListenComm> l;
  ASSERT_EQ(be->listen(&h, &l), ncclSuccess) << pendingError();
  NetSetupParams p;
  p.timeoutSec = 10;
  p.peer = 1;
  ASSERT_EQ(be->connect(h, NetConnIdent{1, 0, 7, 0}, p, &out->send), ncclSuccess) << pendingError();
  ASSERT_EQ(l->accept(NetConnIdent{1, 0, 7, 0}, p, &out->recv), ncclSuccess) << pendingError();
}

unsigned char pattern(size_t msg, size_t i) { return static_cast<unsigned char>(msg * 131 + i * 7 + 1); }

// Sends messages of `sizes` (flags = index + 1) and receives them into buffers of maxBytes, poisoned first. With
// burstFirst, every send completes before any receive is posted, so the frames wait in the socket together.
void runStream(const std::vector<size_t>& sizes, size_t maxBytes, bool burstFirst) {
  Pair pr;
  ASSERT_NO_FATAL_FAILURE(connectSocketPair(&pr));
  const size_t n = sizes.size();
  std::vector<std::vector<unsigned char>> out(n), in(n);
  for (size_t m = 0; m < n; ++m) {
    out[m].resize(sizes[m] ? sizes[m] : 1);
    for (size_t i = 0; i < out[m].size(); ++i) out[m][i] = pattern(m, i);
    in[m].assign(maxBytes, kPoison);
  }
  std::vector<NetRequest*> sr(n, nullptr), rr(n, nullptr);
  std::vector<bool> sDone(n, false), rDone(n, false);
  std::vector<size_t> got(n, 0);
  std::vector<uint32_t> flags(n, 0);
  size_t sPosted = 0, rPosted = 0, sFinished = 0, rFinished = 0;
  auto pump = [&](bool receive) {
    while (sPosted < n) {
      NetRequest* r = nullptr;
      ASSERT_EQ(pr.send->isend(out[sPosted].data(), sizes[sPosted], static_cast<uint32_t>(sPosted + 1), &r),
                ncclSuccess)
          << pendingError();
      if (!r) break;
      sr[sPosted++] = r;
    }
    for (size_t m = sFinished; m < sPosted; ++m) {
      if (sDone[m]) continue;
      bool d = false;
      ASSERT_EQ(pr.send->test(sr[m], &d, nullptr, nullptr), ncclSuccess) << pendingError();
      sDone[m] = d;
    }
    while (sFinished < sPosted && sDone[sFinished]) ++sFinished;
    if (!receive) return;
    while (rPosted < n) {
      NetRequest* r = nullptr;
      ASSERT_EQ(pr.recv->irecv(in[rPosted].data(), maxBytes, &r), ncclSuccess) << pendingError();
      if (!r) break;
      rr[rPosted++] = r;
    }
    for (size_t m = rFinished; m < rPosted; ++m) {
      if (rDone[m]) continue;
      bool d = false;
      ASSERT_EQ(pr.recv->test(rr[m], &d, &got[m], &flags[m]), ncclSuccess) << "message " << m << ": " << pendingError();
      rDone[m] = d;
    }
    while (rFinished < rPosted && rDone[rFinished]) ++rFinished;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  if (burstFirst) {
    while (sFinished < n && std::chrono::steady_clock::now() < deadline) ASSERT_NO_FATAL_FAILURE(pump(false));
    ASSERT_EQ(sFinished, n) << "the burst did not leave";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every frame in the receiver's socket
  }
  while ((sFinished < n || rFinished < n) && std::chrono::steady_clock::now() < deadline)
    ASSERT_NO_FATAL_FAILURE(pump(true));
  ASSERT_EQ(sFinished, n);
  ASSERT_EQ(rFinished, n);
  for (size_t m = 0; m < n; ++m) {
    EXPECT_EQ(got[m], sizes[m]) << "message " << m;
    EXPECT_EQ(flags[m], m + 1) << "message " << m;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < maxBytes; ++i) {
      const unsigned char want = i < sizes[m] ? pattern(m, i) : kPoison;
      if (in[m][i] != want && bad++ == 0) first = i;
    }
    EXPECT_EQ(bad, 0u) << "message " << m << " of " << sizes[m] << " bytes: first wrong byte at " << first;
  }
}

// Small frames sent back to back are read together (one recv takes several), then handed out one by one.
TEST(NetSocketStream, BurstOfSmallFramesEveryByte) {
  runStream({8, 0, 1, 3, 24, 16, 4, 0, 100, 8, 2000, 4079, 4080, 4096, 9}, 8192, true);
}

// Frames around the read-ahead's size and large ones: a header read ahead with part of a large payload, the rest
// of which comes straight from the socket.
TEST(NetSocketStream, MixedSizesEveryByte) {
  runStream({8, 70000, 4, 4095, 4097, 0, 300000, 12, 5000, 1, 200000, 8}, 300000, false);
  runStream({8, 4095, 4097, 0, 12, 5000, 1, 8}, 8192, true);  // small enough to wait in the socket buffers
}

// Several sockets per connection: socket 0 carries the headers (read ahead), the others their parts of large
// payloads.
TEST(NetSocketStream, SeveralSocketsEveryByte) {
  EnvVar s("BRAID_NSOCKS_PERPEER", "3");
  ASSERT_EQ(netSocketsPerConnection(), 3);
  runStream({8, 70000, 0, 4095, 300000, 3, 1, 200000, 16, 5000}, 300000, false);
  runStream({8, 16, 0, 1, 2000, 9000, 24}, 9000, true);
}

}  // namespace
}  // namespace braid
