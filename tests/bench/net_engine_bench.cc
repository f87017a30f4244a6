// net_engine_bench: the NET progress engine on its own, without a GPU. Two ranks in one process, each with the
// engine a GPU communicator over sockets gets (polling while a batch is in flight, BRAID_NET_PROXY_THREADS
// progress threads, bulk helpers from BRAID_NET_BULK_BYTES), joined by `channels` connections each way over
// loopback. Per channel and rank a thread plays the GPU's part of a ring step: it publishes a step into its send
// FIFO, waits for the peer's step in its receive FIFO, checks every byte, frees the slot, and goes on; `steps`
// such exchanges make one operation (a 2-rank ring all-reduce is 2 steps per chunk). Prints the median, p10 and
// p90 of an operation's time per step size. --active A: only the first A channels carry steps (an op too small
// for every connected channel).
// --hops: a ping-pong on channel 0 instead, timing a hop's stages (runHops); --sockets: the same ping-pong on bare
// sockets, without the engine (runSockets).
//   net_engine_bench [--channels C] [--active A] [--steps K] [--iters N] [--warmup W] [--bytes S1,S2,...]
//                    [--hops | --sockets]
#include <sched.h>
#include <sys/socket.h>

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
#include "core/result.h"
#include "core/socket.h"
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
  bool hops = false;     // ping-pong on channel 0, timing each hop's stages
  bool sockets = false;  // ping-pong on bare sockets: the bound under the engine
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--hops" || a == "--sockets") {
      (a == "--hops" ? o->hops : o->sockets) = true;
      continue;
    }
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

  // Publishes the next step once its slot is free.
  bool publish(size_t bytes) {
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
    return true;
  }

  // Waits for the peer's next step (calling `meanwhile` as it polls), checks it and frees its slot.
  template <class F>
  bool receive(size_t bytes, F meanwhile) {
    std::string why;
    const uint64_t r = recvStep++;
    if (!testutil::spinUntil(recv, [&] { meanwhile(); return loadAcquire(recv.tail) > r; }, 20, &why)) {
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
  bool receive(size_t bytes) {
    return receive(bytes, [] {});
  }

  // One exchange: publish a step, wait for the peer's, check it, free its slot.
  bool exchange(size_t bytes) { return publish(bytes) && receive(bytes); }
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Two ranks joined by `channels` connections each way, and a Lane per channel and rank: lanes 0..c-1 are rank 0's
// channels, c..2c-1 rank 1's.
struct Pair {
  std::atomic<bool> busy{true};
  BenchRank a{0, &busy}, b{1, &busy};
  std::vector<Connector> ab, ba, abR, baR;
  std::vector<Lane> lanes;

  bool connect(int c, size_t maxBytes) {
    ab.resize(c), ba.resize(c), abR.resize(c), baR.resize(c);
    for (int ch = 0; ch < c; ++ch) {
      testutil::connectPair(netTransport(), a, b, ch, 8 * maxBytes, &ab[ch], &abR[ch]);
      testutil::connectPair(netTransport(), b, a, ch, 8 * maxBytes, &ba[ch], &baR[ch]);
    }
    if (::testing::Test::HasFailure() || ab[0].info.stepBytes < maxBytes) {
      fprintf(stderr, "net_engine_bench: setup failed (%s)\n", pendingError().c_str());
      return false;
    }
    lanes.resize(2 * c);
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
    return true;
  }
};

double usSince(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - t0).count();
}

// --hops: rank 0 sends a step on channel 0 and rank 1 answers it, one at a time. Both ranks live in this process,
// so one clock times every stage of a hop: from publishing the step to its send slot coming back (the proxy saw
// it and the socket took it), to the peer seeing it, and the round trip.
int runHops(const Options& o) {
  Pair p;
  if (!p.connect(o.channels, *std::max_element(o.bytes.begin(), o.bytes.end()))) return 1;
  printf("# net_engine_bench --hops: 2 ranks, %d channels each way (channel 0 carries steps), %d progress threads "
         "per rank; medians (p90) in us\n",
         o.channels, p.a.ctx.proxy->threads());
  printf("# %10s %16s %16s %16s\n", "bytes/step", "sent", "one_hop", "round_trip");
  Lane& ping = p.lanes[0];
  Lane& pong = p.lanes[o.channels];
  std::atomic<bool> ok{true};
  for (size_t bytes : o.bytes) {
    const int n = o.warmup + o.iters;
    std::vector<Clock::time_point> t0(n), arrived(n);
    std::vector<double> sent, hop, rtt;
    std::thread answer([&] {
      for (int it = 0; it < n && ok; ++it) {
        if (!pong.receive(bytes)) {
          ok = false;
          return;
        }
        arrived[it] = Clock::now();
        ok = pong.publish(bytes);
      }
    });
    for (int it = 0; it < n && ok; ++it) {
      t0[it] = Clock::now();
      const uint64_t s = ping.sendStep;
      if (!ping.publish(bytes)) {
        ok = false;
        break;
      }
      Clock::time_point out{};
      if (!ping.receive(bytes, [&] {
            if (out == Clock::time_point{} && loadAcquire(ping.send.head) > s) out = Clock::now();
          })) {
        ok = false;
        break;
      }
      const auto back = Clock::now();
      if (out == Clock::time_point{}) out = back;
      if (it < o.warmup) continue;
      sent.push_back(usSince(t0[it], out));
      rtt.push_back(usSince(t0[it], back));
    }
    answer.join();
    if (!ok) break;
    for (int it = o.warmup; it < n; ++it) hop.push_back(usSince(t0[it], arrived[it]));
    printf("  %10zu %8.2f (%5.1f) %8.2f (%5.1f) %8.2f (%5.1f)\n", bytes, percentile(sent, 0.5), percentile(sent, 0.9),
           percentile(hop, 0.5), percentile(hop, 0.9), percentile(rtt, 0.5), percentile(rtt, 0.9));
    fflush(stdout);
  }
  p.busy = false;
  for (const Lane& l : p.lanes)
    if (!l.err.empty()) fprintf(stderr, "net_engine_bench: %s\n", l.err.c_str());
  return ok ? 0 : 1;
}

// A connected pair of TCP sockets over loopback, as the socket backend sets them (TCP_NODELAY).
bool loopbackPair(Socket* a, Socket* b) {
  SockAddr addr;
  Socket listener;
  return parseSockAddr("127.0.0.1:0", &addr) == ncclSuccess && listener.listen(&addr) == ncclSuccess &&
         a->connect(addr, 5, nullptr) == ncclSuccess && listener.accept(b, 5, nullptr) == ncclSuccess &&
         a->setNoDelay() == ncclSuccess && b->setNoDelay() == ncclSuccess;
}

// Reads exactly n bytes, polling as the engine does (non-blocking reads, yielding between them).
bool readAll(int fd, char* p, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    if (r > 0) got += static_cast<size_t>(r);
    if (r <= 0) sched_yield();
  }
  return true;
}

bool writeAll(int fd, const char* p, size_t n) {
  for (size_t put = 0; put < n;) {
    const ssize_t w = send(fd, p + put, n - put, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (w > 0) put += static_cast<size_t>(w);
  }
  return true;
}

// --sockets: the round trip of a message and its answer on bare sockets, one thread a side, without the engine:
// over one two-way connection (the answer carries the ACK of the message) and over a connection each way (the
// layout of the NET transport: every message is answered by a bare ACK of its own).
int runSockets(const Options& o) {
  printf("# net_engine_bench --sockets: round trip on bare TCP sockets over loopback; medians (p90) in us\n");
  printf("# %10s %16s %16s\n", "bytes", "two_way_conn", "conn_each_way");
  const size_t maxBytes = *std::max_element(o.bytes.begin(), o.bytes.end());
  for (size_t bytes : o.bytes) {
    printf("  %10zu", bytes);
    for (int eachWay = 0; eachWay < 2; ++eachWay) {
      Socket s1, r1, s2, r2;  // s1 -> r1 carries the messages, s2 -> r2 the answers (each way)
      if (!loopbackPair(&s1, &r1) || (eachWay && !loopbackPair(&r2, &s2))) {
        fprintf(stderr, "net_engine_bench: cannot connect over loopback: %s\n", pendingError().c_str());
        return 1;
      }
      const int a1 = s1.fd(), b1 = r1.fd(), a2 = eachWay ? r2.fd() : a1, b2 = eachWay ? s2.fd() : b1;
      const int n = o.warmup + o.iters;
      std::atomic<bool> ok{true};
      std::thread answer([&] {
        std::vector<char> buf(maxBytes);
        for (int it = 0; it < n && ok; ++it)
          if (!readAll(b1, buf.data(), bytes) || !writeAll(b2, buf.data(), bytes)) ok = false;
      });
      std::vector<char> buf(maxBytes, 1);
      std::vector<double> rtt;
      for (int it = 0; it < n && ok; ++it) {
        const auto t0 = Clock::now();
        if (!writeAll(a1, buf.data(), bytes) || !readAll(a2, buf.data(), bytes)) ok = false;
        if (it >= o.warmup) rtt.push_back(usSince(t0, Clock::now()));
      }
      shutdown(a1, SHUT_RDWR);  // an answering thread still reading sees the end
      answer.join();  // the Sockets close as they leave scope
      if (!ok || rtt.empty()) {
        fprintf(stderr, "net_engine_bench: a bare socket failed: %s\n", strerror(errno));
        return 1;
      }
      printf(" %8.2f (%5.1f)", percentile(rtt, 0.5), percentile(rtt, 0.9));
    }
    printf("\n");
    fflush(stdout);
  }
  return 0;
}

int run(const Options& o) {
  if (o.hops) return runHops(o);
  if (o.sockets) return runSockets(o);
  Pair p;
  const int c = o.channels;
  if (!p.connect(c, *std::max_element(o.bytes.begin(), o.bytes.end()))) return 1;
  BenchRank& a = p.a;
  BenchRank& b = p.b;
  std::vector<Lane>& lanes = p.lanes;

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
  p.busy = false;
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
                    "[--bytes S1,S2,...] [--hops | --sockets]\n");
    return 2;
  }
  return braid::run(o);
}
