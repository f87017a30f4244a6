// Input generation and the exact check (see perf_data.h for how values are chosen).
#include "perf_data.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <system_error>
#include <thread>
#include <vector>

#include "perf_types.h"

namespace braid {
namespace perf {
namespace {

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The first of `names` set to a positive integer (local rank counts and indices of the launchers), or dflt.
int envFirst(std::initializer_list<const char*> names, int dflt, int minValue) {
  for (const char* v : names) {
    const char* e = std::getenv(v);
    if (e && std::atoi(e) >= minValue) return std::atoi(e);
  }
  return dflt;
}

std::vector<int> affinityOf(pthread_t t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> c;
  if (pthread_getaffinity_np(t, sizeof(set), &set) != 0) return c;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) c.push_back(i);
  return c;
}

// Where filling and checking run. A launcher binds each rank tightly (Open MPI binds each of 2 ranks to one
// core), and 16 threads that inherit the binding share that core: fill + check of 512 MB of int8 took ~25 s
// per size on the 2xH200 machine, most of a 10-minute GPU-machine job. A rank bound to at most 2 CPUs therefore runs
// its data threads on its share (dataCpuSlice) of every CPU the process may be given (a scratch thread asks
// for all and reads back what the kernel grants). Timed loops never run there.
struct DataPlacement {
  int threads = 1;
  std::vector<int> cpus;  // empty: the threads keep the inherited binding
};

const DataPlacement& dataPlacement() {
  static const DataPlacement p = [] {
    DataPlacement d;
    const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int local = envFirst({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "BRAID_LOCAL_NRANKS"}, 1, 1);
    const int localRank = envFirst({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "BRAID_LOCAL_RANK"}, 0, 0);
    d.threads = std::max(1, std::min(16, hw / local));
    if (affinityOf(pthread_self()).size() > 2) return d;
    std::vector<int> allowed;
    try {
      std::thread probe([&allowed] {
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &all);
        if (pthread_setaffinity_np(pthread_self(), sizeof(all), &all) == 0) allowed = affinityOf(pthread_self());
      });
      probe.join();
    } catch (const std::system_error&) {
    }
    d.cpus = dataCpuSlice(allowed, localRank, local);
    if (d.cpus.size() > 2) d.threads = std::max(1, std::min<int>(16, static_cast<int>(d.cpus.size())));
    else d.cpus.clear();
    return d;
  }();
  return p;
}

int dataThreads() { return dataPlacement().threads; }

// Runs f(begin, end, part) over [0, n) in contiguous parts, one thread each (the caller runs part 0).
template <typename F>
void parallelParts(size_t n, F f) {
  constexpr size_t kMinPart = size_t(1) << 20;
  const size_t parts = std::max<size_t>(1, std::min<size_t>(dataThreads(), n / kMinPart));
  const size_t per = (n + parts - 1) / parts;
  const std::vector<int>& cpus = dataPlacement().cpus;
  std::vector<std::thread> ts;
  for (size_t p = 1; p < parts; ++p) {
    ts.emplace_back([&f, &cpus, n, p, per] {
      if (!cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : cpus) CPU_SET(c, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: else the inherited binding
      }
      f(std::min(n, p * per), std::min(n, (p + 1) * per), p);
    });
  }
  f(0, std::min(n, per), size_t(0));
  for (auto& t : ts) t.join();
}

// Largest K with 2^K exact (and no overflow) in the type, for products.
int maxProdExponent(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return 6;
    case ncclUint8:
      return 7;
    case ncclFloat8e4m3:
      return 8;
    case ncclFloat8e5m2:
    case ncclFloat16:
      return 15;
    default:
      return 30;
  }
}

// Encoding small integers into the 8/16-bit float types goes through a table: the generic encoder costs
// tens of nanoseconds per element, which would dominate checks of large buffers.
class Encoder {
 public:
  explicit Encoder(ncclDataType_t t) : type_(t), size_(typeSize(t)) {
    if (size_ <= 2 && typeIsFloat(t)) {
      table_.resize(kTable * size_);
      for (int64_t v = 0; v < kTable; ++v) encodeInt(t, v, &table_[static_cast<size_t>(v) * size_]);
    }
  }
  void put(int64_t v, unsigned char* dst) const {
    if (!table_.empty() && v >= 0 && v < kTable) {
      std::memcpy(dst, &table_[static_cast<size_t>(v) * size_], size_);
      return;
    }
    switch (type_) {
      case ncclFloat32: {
        float f = static_cast<float>(v);
        std::memcpy(dst, &f, 4);
        return;
      }
      case ncclFloat64: {
        double d = static_cast<double>(v);
        std::memcpy(dst, &d, 8);
        return;
      }
      case ncclInt32:
      case ncclUint32: {
        uint32_t x = static_cast<uint32_t>(v);
        std::memcpy(dst, &x, 4);
        return;
      }
      case ncclInt8:
      case ncclUint8: {
        uint8_t x = static_cast<uint8_t>(v);
        std::memcpy(dst, &x, 1);
        return;
      }
      default:
        encodeInt(type_, v, dst);
        return;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr int64_t kTable = 4097;
  ncclDataType_t type_;
  size_t size_;
  std::vector<unsigned char> table_;
};

// Where an element of a rank's checked region comes from.
struct Source {
  enum Kind { kSentinel, kInput, kReduce } kind = kSentinel;
  int rank = 0;      // kInput: whose input
  size_t index = 0;  // kInput: element of that rank's input; kReduce: element reduced over all ranks
};

Source sourceOf(const DataSpec& s, int r, size_t k) {
  const size_t pc = s.counts.paramCount;
  const int n = s.nranks;
  Source src;
  switch (s.coll) {
    case Coll::AllReduce:
      src = {Source::kReduce, 0, k};
      break;
    case Coll::ReduceScatter:
      src = {Source::kReduce, 0, static_cast<size_t>(r) * pc + k};
      break;
    case Coll::AllGather:
      src = {Source::kInput, static_cast<int>(k / pc), k % pc};
      break;
    case Coll::Broadcast:
      src = {Source::kInput, s.root, k};
      break;
    case Coll::Reduce:
      if (r == s.root) {
        src = {Source::kReduce, 0, k};
      } else if (s.inPlace) {
        src = {Source::kInput, r, k};
      }
      break;
    case Coll::AlltoAll:
      src = {Source::kInput, static_cast<int>(k / pc), static_cast<size_t>(r) * pc + k % pc};
      break;
    case Coll::Gather:
      if (r == s.root) {
        src = {Source::kInput, static_cast<int>(k / pc), k % pc};
      } else if (s.inPlace && static_cast<int>(k / pc) == r) {
        src = {Source::kInput, r, k % pc};
      }
      break;
    case Coll::Scatter:
      src = {Source::kInput, s.root, static_cast<size_t>(r) * pc + k};
      break;
    case Coll::SendRecv:
      src = {Source::kInput, (r - 1 + n) % n, k};
      break;
  }
  return src;
}

}  // namespace

ValueRule valueRule(Coll coll, ncclDataType_t type, OpKind op, int nranks) {
  const int64_t m = maxExactInt(type);
  const int64_t n = std::max(nranks, 1);
  ValueRule rule;
  if (!collInfo(coll).hasOp) op = OpKind::Max;  // copies: any exact values
  switch (op) {
    case OpKind::Sum:
    case OpKind::Avg:
      if (m / n >= 1) {
        rule.maxValue = std::min<int64_t>(m / n, int64_t(1) << 30);
      } else {
        rule.kind = ValueRule::kSparseOnes;
        rule.stride = ceilDiv(n, m);
      }
      break;
    case OpKind::MulSum: {
      int64_t even = m & ~int64_t(1);
      if (even / (2 * n) >= 1) {
        rule.maxValue = std::min<int64_t>(even / (2 * n), int64_t(1) << 30);
      } else {
        rule.kind = ValueRule::kSparseOnes;
        rule.stride = ceilDiv(2 * n, even);
      }
      break;
    }
    case OpKind::Prod:
      rule.kind = ValueRule::kProdTwos;
      rule.stride = ceilDiv(n, maxProdExponent(type));
      break;
    case OpKind::Max:
    case OpKind::Min:
      rule.maxValue = std::min<int64_t>(m, int64_t(1) << 20);
      // uint8: stop below the fill byte, so an element nobody wrote can never equal its expected value.
      if (type == ncclUint8) rule.maxValue = std::min<int64_t>(rule.maxValue, kSentinelByte - 1);
      break;
  }
  return rule;
}

int64_t inputValue(const DataSpec& spec, const ValueRule& rule, int q, size_t j) {
  switch (rule.kind) {
    case ValueRule::kDense: {
      uint64_t h = mix64(mix64(spec.seed ^ (static_cast<uint64_t>(q) * 0xD6E8FEB86659FD93ull)) + j);
      return static_cast<int64_t>(h % static_cast<uint64_t>(rule.maxValue + 1));
    }
    case ValueRule::kSparseOnes:
      return ((j + static_cast<size_t>(q)) % static_cast<size_t>(rule.stride) == 0) ? 1 : 0;
    case ValueRule::kProdTwos: {
      if ((j + static_cast<size_t>(q)) % static_cast<size_t>(rule.stride) != 0) return 1;
      uint64_t h = mix64(mix64(spec.seed ^ (static_cast<uint64_t>(q) * 0xD6E8FEB86659FD93ull)) + j);
      return (h & 1) ? 2 : 1;
    }
  }
  return 0;
}

void fillInput(const DataSpec& spec, int rank, void* dst, size_t count, size_t first) {
  ValueRule rule = valueRule(spec.coll, spec.type, spec.op, spec.nranks);
  const Encoder enc(spec.type);
  auto* out = static_cast<unsigned char*>(dst);
  parallelParts(count, [&](size_t b, size_t e, size_t) {
    for (size_t i = b; i < e; ++i) enc.put(inputValue(spec, rule, rank, first + i), out + i * enc.size());
  });
}

namespace {

struct WrongElem {
  size_t index;
  double got;
  double expected;
  bool sentinel;  // expected the untouched fill pattern
};

// Checks elements [begin, end); returns how many are wrong and keeps the first `keep` of them.
int64_t checkRange(const DataSpec& spec, int rank, const unsigned char* g, size_t begin, size_t end, size_t keep,
                   std::vector<WrongElem>* first) {
  const ValueRule rule = valueRule(spec.coll, spec.type, spec.op, spec.nranks);
  const Encoder enc(spec.type);
  const size_t es = enc.size();
  const bool tolerant = spec.op == OpKind::Avg && typeIsFloat(spec.type) && collInfo(spec.coll).hasOp;
  const double tolUnit = (spec.nranks + 2) * std::ldexp(1.0, -(mantissaBits(spec.type) + 1));
  unsigned char want[8];
  unsigned char sentinel[8];
  std::memset(sentinel, kSentinelByte, sizeof(sentinel));
  int64_t wrong = 0;
  for (size_t k = begin; k < end; ++k) {
    const unsigned char* elem = g + k * es;
    Source src = sourceOf(spec, rank, k);
    double expectValue = 0;
    bool ok;
    if (src.kind == Source::kSentinel) {
      ok = std::memcmp(elem, sentinel, es) == 0;
    } else if (src.kind == Source::kInput) {
      int64_t v = inputValue(spec, rule, src.rank, src.index);
      enc.put(v, want);
      expectValue = static_cast<double>(v);
      ok = std::memcmp(elem, want, es) == 0;
    } else {
      int64_t acc = 0;
      for (int q = 0; q < spec.nranks; ++q) {
        int64_t v = inputValue(spec, rule, q, src.index);
        switch (spec.op) {
          case OpKind::Sum:
          case OpKind::Avg:
            acc = q == 0 ? v : acc + v;
            break;
          case OpKind::MulSum:
            acc = q == 0 ? v * mulsumScalar(q) : acc + v * mulsumScalar(q);
            break;
          case OpKind::Prod:
            acc = q == 0 ? v : acc * v;
            break;
          case OpKind::Max:
            acc = q == 0 ? v : std::max(acc, v);
            break;
          case OpKind::Min:
            acc = q == 0 ? v : std::min(acc, v);
            break;
        }
      }
      if (tolerant) {
        expectValue = static_cast<double>(acc) / spec.nranks;
        double v = decodeValue(spec.type, elem);
        ok = std::fabs(v - expectValue) <= tolUnit * std::max(std::fabs(expectValue), 1.0);
        // The inputs are never negative, so neither is their average, however it rounds. With few mantissa
        // bits and many ranks (fp8, 7+ ranks) the tolerance spans the whole range of results; this still
        // rejects the fill pattern (negative in every float type) of an element nobody wrote.
        ok = ok && !(v < 0) && std::memcmp(elem, sentinel, es) != 0;
      } else {
        if (spec.op == OpKind::Avg) acc /= spec.nranks;  // integer types: NCCL divides the sum, truncating
        expectValue = static_cast<double>(acc);
        enc.put(acc, want);
        ok = std::memcmp(elem, want, es) == 0;
      }
    }
    if (!ok) {
      if (first->size() < keep)
        first->push_back(WrongElem{k, decodeValue(spec.type, elem), expectValue, src.kind == Source::kSentinel});
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace

int64_t checkOutput(const DataSpec& spec, int rank, const void* got, const std::string& what) {
  const size_t count = spec.counts.recvCount;
  if (count == 0) return 0;
  constexpr size_t kShown = 5;
  const auto* g = static_cast<const unsigned char*>(got);
  std::vector<std::vector<WrongElem>> firsts(static_cast<size_t>(dataThreads()));
  std::vector<int64_t> counts(firsts.size(), 0);
  parallelParts(count, [&](size_t b, size_t e, size_t part) {
    counts[part] = checkRange(spec, rank, g, b, e, kShown, &firsts[part]);
  });
  int64_t wrong = 0;
  size_t shown = 0;
  for (size_t p = 0; p < firsts.size(); ++p) {  // parts are in index order: the first few overall
    wrong += counts[p];
    for (const WrongElem& w : firsts[p]) {
      if (shown++ >= kShown) break;
      if (w.sentinel) {
        std::fprintf(stderr, "%s: rank %d element %zu is %g, expected the untouched fill pattern\n", what.c_str(),
                     rank, w.index, w.got);
      } else {
        std::fprintf(stderr, "%s: rank %d element %zu is %g, expected %g\n", what.c_str(), rank, w.index, w.got,
                     w.expected);
      }
    }
  }
  if (wrong > static_cast<int64_t>(kShown))
    std::fprintf(stderr, "%s: rank %d: %" PRId64 " wrong elements in all\n", what.c_str(), rank, wrong);
  return wrong;
}

std::vector<int> dataCpuSlice(const std::vector<int>& allowed, int localRank, int localSize) {
  if (allowed.empty() || localSize < 1 || localRank < 0) return {};
  const size_t per = std::max<size_t>(1, allowed.size() / static_cast<size_t>(localSize));
  const size_t begin = (static_cast<size_t>(localRank) * per) % allowed.size();
  return std::vector<int>(allowed.begin() + begin, allowed.begin() + std::min(allowed.size(), begin + per));
}

int corruptRank(Coll coll, int nranks, int root) {
  if (coll == Coll::Reduce || coll == Coll::Gather) return root;
  return nranks - 1;
}

void corruptElement(const DataSpec& spec, void* hostOutput) {
  size_t es = typeSize(spec.type);
  size_t k = spec.counts.recvCount / 2;
  auto* p = static_cast<unsigned char*>(hostOutput) + k * es;
  p[es - 1] ^= 0x40;  // a high exponent bit for floats, bit 6 (or 62) for integers
}

}  // namespace perf
}  // namespace braid
