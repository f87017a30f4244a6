// The LL protocol's rules (collectives/ll_protocol.h) exercised by a host model of one connection: a sender
// thread and a receiver thread exchanging messages of random sizes through nSteps slots of flagged 8-byte
// words, with head credits, from step 0, across the 32-bit flag wrap and across cleaning periods (each
// message is one LL operation; each side tracks its last cleaning step). A stale
// line carrying a current-looking flag (what a line untouched for 2^32 steps would hold) is never accepted
// with cleaning on, and is accepted (wrong data) with cleaning off: the test can fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "collectives/ll_protocol.h"

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

  std::atomic<uint64_t>* slot(uint64_t step) { return &words[(step % nSteps) * (slotBytes / 8)]; }
};

// Waits for a send credit at `step`; false if the receiver gave up.
bool waitCredit(LlConn& c, uint64_t step) {
  while (step >= c.head.load(std::memory_order_acquire) + c.nSteps) {
    if (c.giveUp.load()) return false;
  }
  return true;
}

// Sends `msg` as one LL operation from *step: cleaning steps first when due, then the data steps.
void sendMessage(LlConn& c, uint64_t* step, const std::vector<uint8_t>& msg, int delayUs) {
  const size_t per = llSlotDataBytes(c.slotBytes);
  if (c.clean && llNeedsClean(*step, c.senderClean)) {
    c.senderClean = *step;
    for (uint32_t k = 0; k < c.nSteps; ++k, ++*step) {
      if (!waitCredit(c, *step)) return;
      std::atomic<uint64_t>* w = c.slot(*step);
      for (size_t i = 0; i < c.slotBytes / 8; ++i) w[i].store(llWord(0, llFlag(*step)), std::memory_order_relaxed);
    }
  }
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
  if (c.clean && llNeedsClean(*step, c.receiverClean)) {  // see every slot cleaned, hand each back
    c.receiverClean = *step;
    for (uint32_t k = 0; k < c.nSteps; ++k) {
      std::atomic<uint64_t>* w = c.slot(*step);
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < c.slotBytes / 8; ++i) {
        while (llWordFlag(w[i].load(std::memory_order_relaxed)) != llFlag(*step)) {
          if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
            c.giveUp.store(true);
            return false;
          }
        }
      }
      ++*step;
      c.head.store(*step, std::memory_order_release);
    }
  }
  size_t off = 0;
  do {
    std::atomic<uint64_t>* w = c.slot(*step);
    const uint32_t flag = llFlag(*step);
    const size_t n = std::min(per, bytes - off);
    for (size_t line = 0; line < llLines(n); ++line) {
      uint64_t a, b;
      const auto t0 = std::chrono::steady_clock::now();
      while (llWordFlag(a = w[2 * line].load(std::memory_order_relaxed)) != flag ||
             llWordFlag(b = w[2 * line + 1].load(std::memory_order_relaxed)) != flag) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
          c.giveUp.store(true);
          return false;
        }
      }
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

}  // namespace
}  // namespace braid
