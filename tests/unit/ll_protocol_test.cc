// The LL protocol's rules (algo/ll_protocol.h) exercised by a host model of one connection: a sender
// thread and a receiver thread exchanging messages of random sizes through nSteps slots of flagged 8-byte
// words, with head credits, from step 0, across the 32-bit flag wrap and across cleaning periods (each
// message is one LL operation; each side tracks its last cleaning step), and of an n-rank ring (the order in
// which an operation cleans its directions). A stale
// line carrying a current-looking flag (what a line untouched for 2^32 steps would hold) is never accepted
// with cleaning on, and is accepted (wrong data) with cleaning off: the test can fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "algo/ll_protocol.h"

namespace braid {
namespace {

struct LlConn {
  LlConn(uint32_t steps, size_t slot, uint64_t firstStep, uint64_t lastClean = 0)
      : nSteps(steps), slotBytes(slot), words(steps * slot / 8), head(firstStep), start(firstStep),
        senderClean(lastClean), receiverClean(lastClean) {
    for (auto& w : words) w.store(0, std::memory_order_relaxed);
  }
  uint32_t nSteps;
  size_t slotBytes;
  std::vector<std::atomic<uint64_t>> words;  // slot s: words [s * slotBytes / 8, (s + 1) * slotBytes / 8)
  std::atomic<uint64_t> head;                 // receiver -> sender: steps consumed
  uint64_t start;
  uint64_t senderClean;                       // each side's last cleaning step (kept separately, as on GPUs)
  uint64_t receiverClean;
  bool clean = true;                          // follow the cleaning rule (off only to show the hazard)
  bool holdFirstData = false;                 // sender: before its first data step, wait (up to 2 s) for the
                                              // receiver to move past it on its own (only stale lines allow that)
  std::atomic<bool> giveUp{false};
  // Waits give up after this (the ring model's deadlock detector); far away by default.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);

  std::atomic<uint64_t>* slot(uint64_t step) { return &words[(step % nSteps) * (slotBytes / 8)]; }
};

// Waits for a send credit at `step`; false if the receiver gave up or the deadline passed.
bool waitCredit(LlConn& c, uint64_t step) {
  while (step >= c.head.load(std::memory_order_acquire) + c.nSteps) {
    std::this_thread::yield();  // ring tests run more threads than this VM has cores
    if (c.giveUp.load()) return false;
    if (std::chrono::steady_clock::now() > c.deadline) {
      c.giveUp.store(true);
      return false;
    }
  }
  return true;
}

// Waits until `line` carries `flag` (both words); false on give-up or deadline.
bool waitLine(LlConn& c, std::atomic<uint64_t>* line, uint32_t flag, uint64_t* a, uint64_t* b) {
  while (llWordFlag(*a = line[0].load(std::memory_order_relaxed)) != flag ||
         llWordFlag(*b = line[1].load(std::memory_order_relaxed)) != flag) {
    std::this_thread::yield();
    if (c.giveUp.load()) return false;
    if (std::chrono::steady_clock::now() > c.deadline) {
      c.giveUp.store(true);
      return false;
    }
  }
  return true;
}

// The sender's clean run when due (nSteps steps rewriting every line with the step's flag, no data).
bool cleanSend(LlConn& c, uint64_t* step) {
  if (!c.clean || !llNeedsClean(*step, c.senderClean)) return true;
  c.senderClean = *step;
  for (uint32_t k = 0; k < c.nSteps; ++k, ++*step) {
    if (!waitCredit(c, *step)) return false;
    std::atomic<uint64_t>* w = c.slot(*step);
    for (size_t i = 0; i < c.slotBytes / 8; ++i) w[i].store(llWord(0, llFlag(*step)), std::memory_order_relaxed);
  }
  return true;
}

// The receiver's clean run when due: sees every line of each slot cleaned, hands the slot back.
bool cleanRecv(LlConn& c, uint64_t* step) {
  if (!c.clean || !llNeedsClean(*step, c.receiverClean)) return true;
  c.receiverClean = *step;
  for (uint32_t k = 0; k < c.nSteps; ++k) {
    std::atomic<uint64_t>* w = c.slot(*step);
    uint64_t a, b;
    for (size_t i = 0; i < c.slotBytes / 8; i += 2)
      if (!waitLine(c, w + i, llFlag(*step), &a, &b)) return false;
    ++*step;
    c.head.store(*step, std::memory_order_release);
  }
  return true;
}

// Sends `msg` as one LL operation from *step: cleaning steps first when due, then the data steps.
void sendMessage(LlConn& c, uint64_t* step, const std::vector<uint8_t>& msg, int delayUs) {
  const size_t per = llSlotDataBytes(c.slotBytes);
  if (!cleanSend(c, step)) return;
  size_t off = 0;
  do {
    if (!waitCredit(c, *step)) return;
    std::atomic<uint64_t>* w = c.slot(*step);
    const uint32_t flag = llFlag(*step);
    if (delayUs) std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
    if (c.holdFirstData) {
      c.holdFirstData = false;
      const auto t0 = std::chrono::steady_clock::now();
      while (c.head.load(std::memory_order_acquire) <= *step &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
        std::this_thread::yield();
      }
    }
    const size_t n = std::min(per, msg.size() - off);
    for (size_t line = 0; line < llLines(n); ++line) {
      uint64_t payload = 0;
      std::memcpy(&payload, msg.data() + off + line * 8, std::min<size_t>(8, n - line * 8));
      uint32_t d0, d1;
      llSplit(payload, &d0, &d1);
      w[2 * line].store(llWord(d0, flag), std::memory_order_relaxed);
      w[2 * line + 1].store(llWord(d1, flag), std::memory_order_relaxed);
    }
    off += n;
    ++*step;
  } while (off < msg.size());
}

// Receives `bytes` as one LL operation from *step; false if it gave up (a line never showed up).
bool recvMessage(LlConn& c, uint64_t* step, size_t bytes, std::vector<uint8_t>* out) {
  const size_t per = llSlotDataBytes(c.slotBytes);
  out->assign(bytes, 0);
  if (!cleanRecv(c, step)) return false;
  size_t off = 0;
  do {
    std::atomic<uint64_t>* w = c.slot(*step);
    const uint32_t flag = llFlag(*step);
    const size_t n = std::min(per, bytes - off);
    for (size_t line = 0; line < llLines(n); ++line) {
      uint64_t a, b;
      if (!waitLine(c, w + 2 * line, flag, &a, &b)) return false;
      const uint64_t payload = llJoin(llWordData(a), llWordData(b));
      std::memcpy(out->data() + off + line * 8, &payload, std::min<size_t>(8, n - line * 8));
    }
    off += n;
    ++*step;
    c.head.store(*step, std::memory_order_release);
  } while (off < bytes);
  return true;
}

// Runs `nMsgs` random messages (1 byte to 3 slots) from step `first`; returns the number of wrong messages.
int exchange(LlConn& c, int nMsgs, uint32_t seed, int senderDelayUs = 0) {
  std::mt19937 rng(seed);
  const size_t maxBytes = 3 * llSlotDataBytes(c.slotBytes);
  std::vector<std::vector<uint8_t>> msgs(nMsgs);
  for (auto& m : msgs) {
    m.resize(1 + rng() % maxBytes);
    for (auto& b : m) b = static_cast<uint8_t>(rng());
  }
  std::thread sender([&] {
    uint64_t step = c.start;
    for (const auto& m : msgs) sendMessage(c, &step, m, senderDelayUs);
  });
  int wrong = 0;
  uint64_t step = c.start;
  std::vector<uint8_t> got;
  for (const auto& m : msgs) {
    if (!recvMessage(c, &step, m.size(), &got)) {
      ++wrong;
      break;
    }
    wrong += got != m;
  }
  sender.join();
  return wrong;
}

TEST(LlProtocol, RulesAndEncoding) {
  EXPECT_EQ(llFlag(0), 1u);
  EXPECT_EQ(llFlag((uint64_t(1) << 32) - 1), 0u) << "the flag wraps with the low 32 bits";
  EXPECT_EQ(llLines(0), 0u);
  EXPECT_EQ(llLines(1), 1u);
  EXPECT_EQ(llLines(17), 3u);
  EXPECT_EQ(llSlotDataBytes(64 << 10), 32u << 10);
  uint32_t d0, d1;
  llSplit(0x1122334455667788ull, &d0, &d1);
  EXPECT_EQ(llJoin(d0, d1), 0x1122334455667788ull);
  const uint64_t w = llWord(0xdeadbeef, 7);
  EXPECT_EQ(llWordData(w), 0xdeadbeefu);
  EXPECT_EQ(llWordFlag(w), 7u);
  // Cleaning is due once a period has passed since the last one (a new connection: from step 0).
  EXPECT_FALSE(llNeedsClean(0, 0));
  EXPECT_FALSE(llNeedsClean(kLlCleanPeriod - 1, 0));
  EXPECT_TRUE(llNeedsClean(kLlCleanPeriod, 0));
  EXPECT_FALSE(llNeedsClean(5 * kLlCleanPeriod + 3, 4 * kLlCleanPeriod + 4));
  EXPECT_TRUE(llNeedsClean(uint64_t(1) << 32, 0)) << "never reaches the wrap without cleaning";
}

TEST(LlProtocol, ManyMessagesFromStepZero) {
  LlConn c(8, 4096, 0);
  EXPECT_EQ(exchange(c, 3000, 1), 0);
}

TEST(LlProtocol, AcrossTheFlagWrap) {
  const uint64_t first = (uint64_t(1) << 32) - 700;
  LlConn c(8, 4096, first, first - kLlCleanPeriod + 300);  // a cleaning falls due mid-run
  EXPECT_EQ(exchange(c, 1500, 2), 0);
  EXPECT_NE(c.senderClean, first - kLlCleanPeriod + 300) << "cleaned on the way";
  EXPECT_EQ(c.senderClean, c.receiverClean) << "both sides cleaned at the same step";
}

TEST(LlProtocol, AcrossCleaningPeriods) {
  for (uint64_t k : {uint64_t(1), uint64_t(16), uint64_t(17)}) {
    const uint64_t first = k * kLlCleanPeriod - 40;
    LlConn c(8, 2048, first, first - kLlCleanPeriod + 40);
    EXPECT_EQ(exchange(c, 400, 3 + static_cast<uint32_t>(k)), 0) << "period " << k;
    EXPECT_EQ(c.senderClean, c.receiverClean);
  }
}

// Lines left from 2^32 steps ago carry the flags of the steps about to run. With cleaning due, the clean
// steps overwrite them before any data step reads them; without cleaning the receiver takes them (the
// sender holds its first data step until the receiver has moved past it).
void fillStale(LlConn& c, uint64_t from) {
  for (uint64_t s = from; s < from + c.nSteps; ++s) {  // one step per slot: the next ones to be read
    std::atomic<uint64_t>* w = c.slot(s);
    for (size_t i = 0; i < c.slotBytes / 8; ++i) w[i].store(llWord(0xBADBAD, llFlag(s)), std::memory_order_relaxed);
  }
}

TEST(LlProtocol, StaleLinesAreCleanedBeforeTheyCanMatch) {
  const uint64_t first = (uint64_t(1) << 32) + 77;
  LlConn c(8, 1024, first, first - kLlCleanPeriod);  // due: the first 8 steps are the clean run
  fillStale(c, first + 8);
  EXPECT_EQ(exchange(c, 60, 5, 200), 0);
}

TEST(LlProtocol, WithoutCleaningStaleLinesAreTaken) {
  const uint64_t first = (uint64_t(1) << 32) + 77;
  LlConn c(8, 1024, first, first - kLlCleanPeriod);
  c.clean = false;
  c.holdFirstData = true;  // makes the receiver reach the first step before any real data: deterministic
  fillStale(c, first);
  EXPECT_GT(exchange(c, 60, 5, 200), 0) << "the hazard the cleaning rule exists for";
}

// ---------------------------------------------------------------------------------------------- ring model
// n ranks in a ring, rank r sending on conns[r] and receiving on conns[r-1], run all-gathers of one line per
// rank (step 0 sends only, the middle steps receive and forward, the last only receives: the call pattern of
// every ring schedule). The cleaning order matters there: an operation must run the clean steps of every
// direction it uses before its first step, sends first (DevPrimsLL::begin). Cleaning each direction lazily,
// at its first call, deadlocks: every rank's first call only sends, and its first data step needs a credit
// for a clean step the peer consumes only in its second call.

bool sendOne(LlConn& c, uint64_t* step, uint64_t payload) {
  if (!waitCredit(c, *step)) return false;
  uint32_t d0, d1;
  llSplit(payload, &d0, &d1);
  std::atomic<uint64_t>* w = c.slot(*step);
  w[0].store(llWord(d0, llFlag(*step)), std::memory_order_relaxed);
  w[1].store(llWord(d1, llFlag(*step)), std::memory_order_relaxed);
  ++*step;
  return true;
}

bool recvOne(LlConn& c, uint64_t* step, uint64_t* payload) {
  uint64_t a, b;
  if (!waitLine(c, c.slot(*step), llFlag(*step), &a, &b)) return false;
  *payload = llJoin(llWordData(a), llWordData(b));
  ++*step;
  c.head.store(*step, std::memory_order_release);
  return true;
}

uint64_t ringValue(int op, int rank) { return 0x5eed000000000000ull + uint64_t(op) * 1000 + rank; }

// One rank's all-gather number `op`; false if a wait gave up (deadlock) or a value was wrong.
bool ringAllGather(std::vector<std::unique_ptr<LlConn>>& conns, int r, int op, bool cleanFirst, uint64_t* sStep,
                   uint64_t* rStep) {
  const int n = static_cast<int>(conns.size());
  LlConn& out = *conns[r];
  LlConn& in = *conns[(r - 1 + n) % n];
  if (cleanFirst && (!cleanSend(out, sStep) || !cleanRecv(in, rStep))) return false;
  if (!cleanFirst && !cleanSend(out, sStep)) return false;  // lazily: the send direction at its first call
  if (!sendOne(out, sStep, ringValue(op, r))) return false;
  for (int k = 1; k < n; ++k) {
    if (!cleanFirst && k == 1 && !cleanRecv(in, rStep)) return false;  // the receive direction at its first call
    uint64_t v = 0;
    if (!recvOne(in, rStep, &v)) return false;
    if (v != ringValue(op, (r - k + n) % n)) return false;
    if (k < n - 1 && !sendOne(out, sStep, v)) return false;
  }
  return true;
}

// Runs `ops` all-gathers on n ranks (threads) from `first` with cleaning due; returns how many ranks failed.
int runRing(int n, int ops, uint64_t first, bool cleanFirst, std::chrono::milliseconds limit) {
  std::vector<std::unique_ptr<LlConn>> conns;
  for (int r = 0; r < n; ++r) {
    conns.push_back(std::make_unique<LlConn>(8, 256, first, first - kLlCleanPeriod));  // cleaning due at once
    conns.back()->deadline = std::chrono::steady_clock::now() + limit;
  }
  std::atomic<int> failed{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      uint64_t sStep = first, rStep = first;
      for (int op = 0; op < ops; ++op) {
        if (!ringAllGather(conns, r, op, cleanFirst, &sStep, &rStep)) {
          ++failed;
          for (auto& c : conns) c->giveUp.store(true);  // let the others stop too
          return;
        }
      }
    });
  for (auto& t : ts) t.join();
  return failed.load();
}

TEST(LlProtocol, RingCleansEveryDirectionBeforeItsFirstStep) {
  for (int n : {2, 3, 5})
    EXPECT_EQ(runRing(n, 50, (uint64_t(1) << 32) - 20, true, std::chrono::seconds(10)), 0) << n << " ranks";
}

TEST(LlProtocol, RingWithLazyCleaningDeadlocks) {
  for (int n : {2, 3})
    EXPECT_EQ(runRing(n, 5, (uint64_t(1) << 32) - 20, false, std::chrono::milliseconds(300)), n)
        << n << " ranks: every rank waits for a credit its peer gives only later (the rule exists for this)";
}

}  // namespace
}  // namespace braid
