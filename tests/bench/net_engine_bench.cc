// net_engine_bench: the NET progress engine on its own, without a GPU. Two ranks in one process, each with the
// engine a GPU communicator over sockets gets (polling while a batch is in flight, BRAID_NET_PROXY_THREADS
// progress threads, bulk helpers from BRAID_NET_BULK_BYTES), joined by `channels` connections each way over
// loopback. Per channel and rank a thread plays the GPU's part of a ring step: it publishes a step into its send
// FIFO, waits for the peer's step in its receive FIFO, checks every byte, frees the slot, and goes on; `steps`
// such exchanges make one operation (a 2-rank ring all-reduce is 2 steps per chunk). Prints the median, p10 and
// p90 of an operation's time per step size. --active A: only the first A channels carry steps (an op too small
// for every connected channel).
//   net_engine_bench [--channels C] [--active A] [--steps K] [--iters N] [--warmup W] [--bytes S1,S2,...]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/param.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"
#include "unit/transport_test_util.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int channels = 4;
  int active = 0;  // channels that carry steps (0: all); the others stay connected and idle
  int steps = 2;
  int iters = 200;
  int warmup = 20;
  std::vector<size_t> bytes{4096, 16384, 32768, 65536, 131072, 262144};
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return false;
    if (a == "--channels") {
      o->channels = atoi(v);
    } else if (a == "--active") {
      o->active = atoi(v);
    } else if (a == "--steps") {
      o->steps = atoi(v);
    } else if (a == "--iters") {
      o->iters = atoi(v);
    } else if (a == "--warmup") {
      o->warmup = atoi(v);
    } else if (a == "--bytes") {
      o->bytes.clear();
      for (const char* p = v; *p;) {
        char* end = nullptr;
        o->bytes.push_back(strtoull(p, &end, 0));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) return false;
      }
    } else {
      return false;
    }
    ++i;
  }
  if (o->active <= 0 || o->active > o->channels) o->active = o->channels;
  return o->channels > 0 && o->steps > 0 && o->iters > 0 && o->warmup >= 0 && !o->bytes.empty();
}

// A rank as a GPU communicator sets its transport context up (gpu_comm.cc): polling 2 ms after activity, the bulk
// helpers' threshold and the progress threads from their parameters, and a work probe that says a batch is in
// flight while `busy`.
struct BenchRank : testutil::TestRank {
  explicit BenchRank(int r, std::atomic<bool>* busy) : TestRank(r) {
    ctx.proxySpinUs = 2000;
    ctx.proxyBulkBytes = static_cast<size_t>(std::max<int64_t>(0, params::NetBulkBytes()));
    ctx.proxyThreads = static_cast<int>(std::max<int64_t>(1, params::NetProxyThreads()));
    ctx.proxyWorkProbe = [busy] { return busy->load() ? NetWork::Busy : NetWork::Idle; };
  }
};

// Every thread of both ranks meets here before and after an operation; the main thread times the interval.
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void arrive() {
    const uint64_t gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      count_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> count_{0};
  std::atomic<uint64_t> gen_{0};
};

// One channel of one rank: what it sends and what it expects, as an executor's side of both FIFOs.
struct Lane {
  ConnInfo send, recv;
  uint64_t sendStep = 0, recvStep = 0;
  std::vector<char> out, expect;
  std::string err;

  // One exchange: publish a step, wait for the peer's, check it, free its slot.
  bool exchange(size_t bytes) {
    std::string why;
    const uint64_t s = sendStep++;
    if (!testutil::spinUntil(send, [&] { return loadAcquire(send.head) + send.nSteps > s; }, 20, &why)) {
      err = "send: " + why;
      return false;
    }
    const uint32_t slot = static_cast<uint32_t>(s % send.nSteps);
    memcpy(send.buff + static_cast<size_t>(slot) * send.stepBytes, out.data(), bytes);
    send.sizes[slot] = static_cast<int32_t>(bytes);
    storeRelease(send.tail, s + 1);
    const uint64_t r = recvStep++;
    if (!testutil::spinUntil(recv, [&] { return loadAcquire(recv.tail) > r; }, 20, &why)) {
      err = "recv: " + why;
      return false;
    }
    const uint32_t rslot = static_cast<uint32_t>(r % recv.nSteps);
    if (recv.sizes[rslot] != static_cast<int32_t>(bytes) ||
        memcmp(recv.buff + static_cast<size_t>(rslot) * recv.stepBytes, expect.data(), bytes) != 0) {
      err = "step " + std::to_string(r) + " of " + std::to_string(bytes) + " bytes arrived wrong";
      return false;
    }
    storeRelease(recv.head, r + 1);
    return true;
  }
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int run(const Options& o) {
  const size_t maxBytes = *std::max_element(o.bytes.begin(), o.bytes.end());
  std::atomic<bool> busy{true};
  BenchRank a(0, &busy), b(1, &busy);
  const int c = o.channels;
  std::vector<Connector> ab(c), ba(c), abR(c), baR(c);
  for (int ch = 0; ch < c; ++ch) {
    testutil::connectPair(netTransport(), a, b, ch, 8 * maxBytes, &ab[ch], &abR[ch]);
    testutil::connectPair(netTransport(), b, a, ch, 8 * maxBytes, &ba[ch], &baR[ch]);
  }
  if (::testing::Test::HasFailure() || ab[0].info.stepBytes < maxBytes) {
    fprintf(stderr, "net_engine_bench: setup failed (%s)\n", pendingError().c_str());
    return 1;
  }
  // Lanes 0..c-1: rank 0's channels; c..2c-1: rank 1's.
  std::vector<Lane> lanes(2 * c);
  for (int ch = 0; ch < c; ++ch) {
    lanes[ch].send = ab[ch].info;
    lanes[ch].recv = baR[ch].info;
    lanes[c + ch].send = ba[ch].info;
    lanes[c + ch].recv = abR[ch].info;
  }
  for (int l = 0; l < 2 * c; ++l) {
    lanes[l].out.resize(maxBytes);
    for (size_t i = 0; i < maxBytes; ++i) lanes[l].out[i] = static_cast<char>(l * 31 + i * 7 + (i >> 9));
  }
  for (int l = 0; l < 2 * c; ++l) lanes[l].expect = lanes[(l + c) % (2 * c)].out;  // the peer's same channel

  printf("# net_engine_bench: 2 ranks, %d channels each way (%d carrying steps), %d exchanges per operation, %d "
         "progress threads per rank, BRAID_NET_BULK_BYTES=%lld\n",
         c, o.active, o.steps, a.ctx.proxy->threads(), static_cast<long long>(params::NetBulkBytes()));
  printf("# %10s %10s %10s %10s %12s\n", "bytes/step", "median_us", "p10_us", "p90_us", "GB/s/dir");
  SpinBarrier bar(2 * c + 1);
  size_t cur = 0;
  bool quit = false, ok = true;
  std::vector<std::thread> ts;
  for (int l = 0; l < 2 * c; ++l) {
    ts.emplace_back([&, l] {
      for (;;) {
        bar.arrive();  // start
        if (quit) return;
        bool good = true;
        for (int s = 0; s < o.steps && good && l % c < o.active; ++s) good = lanes[l].exchange(cur);
        if (!good) ok = false;
        bar.arrive();  // done
      }
    });
  }
  for (size_t bytes : o.bytes) {
    cur = bytes;
    std::vector<double> us;
    for (int it = 0; it < o.warmup + o.iters && ok; ++it) {
      const auto t0 = Clock::now();
      a.ctx.proxy->wakeSleeping();  // what a launch does
      b.ctx.proxy->wakeSleeping();
      bar.arrive();
      bar.arrive();
      if (it >= o.warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    if (!ok) break;
    const double med = percentile(us, 0.5);
    printf("  %10zu %10.1f %10.1f %10.1f %12.2f\n", bytes, med, percentile(us, 0.1), percentile(us, 0.9),
           static_cast<double>(bytes) * o.active * o.steps / med / 1e3);
    fflush(stdout);
  }
  quit = true;
  bar.arrive();
  for (auto& t : ts) t.join();
  busy = false;
  for (const Lane& l : lanes)
    if (!l.err.empty()) fprintf(stderr, "net_engine_bench: %s\n", l.err.c_str());
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  braid::Options o;
  if (!braid::parse(argc, argv, &o)) {
    fprintf(stderr, "usage: net_engine_bench [--channels C] [--active A] [--steps K] [--iters N] [--warmup W] "
                    "[--bytes S1,S2,...]\n");
    return 2;
  }
  return braid::run(o);
}
