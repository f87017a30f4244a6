// Unit tests of the perf tools' pure parts (tools/perf, header-only or compiled in here): the command line
// (every flag, bad values), nccl-tests' byte counts and busbw formulas against hand-computed values, the
// 8/16-bit float codecs, and the claim the -c check rests on: with the chosen inputs every reduction result
// is exact whatever order the ranks are combined in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../tools/perf/perf_args.h"
#include "../../tools/perf/perf_coll.h"
#include "../../tools/perf/perf_types.h"
// The data generator and checker are one small .cc without dependencies; compiling it in keeps this test
// free of the tools' build targets.
#include "../../tools/perf/perf_data.cc"

namespace {

using namespace braid::perf;

struct Argv {
  std::vector<std::string> s;
  std::vector<char*> p;
  explicit Argv(std::vector<std::string> args) : s(std::move(args)) {
    s.insert(s.begin(), "all_reduce_perf");
    for (auto& x : s) p.push_back(&x[0]);
    p.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(s.size()); }
  char** argv() { return p.data(); }
};

ParseOutcome parse(std::vector<std::string> args, PerfArgs* a, std::string* err = nullptr) {
  Argv v(std::move(args));
  std::string e;
  ParseOutcome o = parsePerfArgs(v.argc(), v.argv(), a, &e);
  if (err) *err = e;
  return o;
}

void expectBad(std::vector<std::string> args, const std::string& mentions) {
  PerfArgs a;
  std::string err;
  EXPECT_EQ(parse(args, &a, &err), ParseOutcome::kError) << args[0];
  EXPECT_NE(err.find(mentions), std::string::npos) << "message '" << err << "' should mention '" << mentions << "'";
}

TEST(PerfArgs, DefaultsMatchNcclTests) {
  PerfArgs a;
  ASSERT_EQ(parse({}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.nThreads, 1);
  EXPECT_EQ(a.nGpus, 1);
  EXPECT_EQ(a.minBytes, 32u << 20);
  EXPECT_EQ(a.maxBytes, 32u << 20);
  EXPECT_EQ(a.stepBytes, 1u << 20);
  EXPECT_EQ(a.stepFactor, 1u);
  EXPECT_EQ(a.iters, 20);
  EXPECT_EQ(a.warmupIters, 5);
  EXPECT_EQ(a.aggIters, 1);
  EXPECT_EQ(a.runCycles, 1);
  EXPECT_EQ(a.check, 1);
  EXPECT_EQ(a.average, 1);
  EXPECT_EQ(a.root, 0);
  ASSERT_EQ(a.ops.size(), 1u);
  EXPECT_EQ(a.ops[0], OpKind::Sum);
  ASSERT_EQ(a.types.size(), 1u);
  EXPECT_EQ(a.types[0], ncclFloat32);
  EXPECT_TRUE(a.jsonPath.empty());
}

TEST(PerfArgs, EveryShortFlag) {
  PerfArgs a;
  ASSERT_EQ(parse({"-t", "2", "-g", "3",  "-b", "8", "-e", "128M", "-i", "4K",       "-f", "2",    "-n", "7", "-m", "4",
                   "-w", "0", "-N", "3",  "-p", "1", "-c", "2",    "-o", "max",      "-d", "half", "-r", "1", "-z", "1",
                   "-y", "1", "-T", "30", "-G", "5", "-C", "1",    "-J", "out.json", "-a", "3",    "-R", "2"},
                  &a),
            ParseOutcome::kRun);
  EXPECT_EQ(a.nThreads, 2);
  EXPECT_EQ(a.nGpus, 3);
  EXPECT_EQ(a.minBytes, 8u);
  EXPECT_EQ(a.maxBytes, 128u << 20);
  EXPECT_EQ(a.stepBytes, 4096u);
  EXPECT_EQ(a.stepFactor, 2u);
  EXPECT_EQ(a.iters, 7);
  EXPECT_EQ(a.aggIters, 4);
  EXPECT_EQ(a.warmupIters, 0);
  EXPECT_EQ(a.runCycles, 3);
  EXPECT_EQ(a.parallelInit, 1);
  EXPECT_EQ(a.check, 2);
  EXPECT_EQ(a.ops, std::vector<OpKind>{OpKind::Max});
  EXPECT_EQ(a.types, std::vector<ncclDataType_t>{ncclFloat16});
  EXPECT_EQ(a.root, 1);
  EXPECT_EQ(a.blocking, 1);
  EXPECT_EQ(a.streamNull, 1);
  EXPECT_EQ(a.timeoutSec, 30);
  EXPECT_EQ(a.graphLaunches, 5);
  EXPECT_EQ(a.reportCputime, 1);
  EXPECT_EQ(a.jsonPath, "out.json");
  EXPECT_EQ(a.average, 3);
  EXPECT_EQ(a.localRegister, 2);
}

TEST(PerfArgs, LongFlagsWithSpaceOrEquals) {
  PerfArgs a;
  ASSERT_EQ(parse({"--nthreads=2",
                   "--ngpus",
                   "2",
                   "--minbytes=1K",
                   "--maxbytes",
                   "1G",
                   "--stepbytes=3",
                   "--stepfactor",
                   "4",
                   "--iters=9",
                   "--agg_iters",
                   "2",
                   "--warmup_iters=1",
                   "--run_cycles",
                   "0",
                   "--parallel_init=0",
                   "--check",
                   "0",
                   "--op=prod",
                   "--datatype",
                   "bfloat16",
                   "--root=all",
                   "--blocking",
                   "0",
                   "--stream_null=0",
                   "--timeout",
                   "0",
                   "--cudagraph=0",
                   "--report_cputime",
                   "0",
                   "--output_file=x.json",
                   "--average",
                   "0",
                   "--local_register=1"},
                  &a),
            ParseOutcome::kRun);
  EXPECT_EQ(a.nThreads, 2);
  EXPECT_EQ(a.nGpus, 2);
  EXPECT_EQ(a.minBytes, 1024u);
  EXPECT_EQ(a.maxBytes, size_t(1) << 30);
  EXPECT_EQ(a.stepBytes, 3u);
  EXPECT_EQ(a.stepFactor, 4u);
  EXPECT_EQ(a.iters, 9);
  EXPECT_EQ(a.aggIters, 2);
  EXPECT_EQ(a.warmupIters, 1);
  EXPECT_EQ(a.runCycles, 0);
  EXPECT_EQ(a.check, 0);
  EXPECT_EQ(a.ops, std::vector<OpKind>{OpKind::Prod});
  EXPECT_EQ(a.types, std::vector<ncclDataType_t>{ncclBfloat16});
  EXPECT_EQ(a.root, -1);
  EXPECT_EQ(a.jsonPath, "x.json");
  EXPECT_EQ(a.average, 0);
  EXPECT_EQ(a.localRegister, 1);
}

TEST(PerfArgs, AttachedShortValues) {
  PerfArgs a;
  ASSERT_EQ(parse({"-b64", "-e1M", "-f2", "-dint8", "-r-1"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.minBytes, 64u);
  EXPECT_EQ(a.maxBytes, 1u << 20);
  EXPECT_EQ(a.types, std::vector<ncclDataType_t>{ncclInt8});
  EXPECT_EQ(a.root, -1);
}

TEST(PerfArgs, Sizes) {
  size_t v = 0;
  EXPECT_TRUE(parseSize("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parseSize("8", &v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseSize("1K", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("1k", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("256M", &v));
  EXPECT_EQ(v, 256u << 20);
  EXPECT_TRUE(parseSize("2G", &v));
  EXPECT_EQ(v, size_t(2) << 30);
  EXPECT_TRUE(parseSize("1.5M", &v));
  EXPECT_EQ(v, 1572864u);
  EXPECT_TRUE(parseSize("64KB", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parseSize("0x10", &v));  // strtod reads hex too
  EXPECT_EQ(v, 16u);
  for (const char* bad : {"", "abc", "-1", "1X", "1KK", "K", "1 M", "nan", "inf", "1e30", "8Kib"})
    EXPECT_FALSE(parseSize(bad, &v)) << bad;
}

TEST(PerfArgs, SizesOnTheCommandLine) {
  expectBad({"-b", "lots"}, "-b");
  expectBad({"-e", "-5"}, "-e");
  expectBad({"--maxbytes=1T"}, "--maxbytes");
  expectBad({"-i", "0"}, "-i");
  expectBad({"-b", "2M", "-e", "1M"}, "minbytes");
}

TEST(PerfArgs, BadIntegerValues) {
  struct Case {
    const char* flag;
    const char* value;
  };
  const Case cases[] = {
      {"-t", "0"}, {"-t", "x"},   {"-t", "1.5"}, {"-g", "0"},           {"-g", "-2"}, {"-f", "0"}, {"-f", "two"},
      {"-n", "0"}, {"-n", "1e3"}, {"-m", "0"},   {"-w", "-1"},          {"-N", "-1"}, {"-p", "2"}, {"-c", "-1"},
      {"-z", "2"}, {"-y", "5"},   {"-T", "-3"},  {"-G", "-1"},          {"-C", "2"},  {"-a", "4"}, {"-a", "-1"},
      {"-R", "3"}, {"-r", "-2"},  {"-r", "x"},   {"-n", "99999999999"}, {"-t", ""},
  };
  for (const Case& c : cases) expectBad({c.flag, c.value}, std::string("'") + c.value + "'");
}

TEST(PerfArgs, Ops) {
  PerfArgs a;
  const char* names[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(parse({"-o", names[i]}, &a), ParseOutcome::kRun) << names[i];
    EXPECT_EQ(a.ops, std::vector<OpKind>{static_cast<OpKind>(i)});
    EXPECT_STREQ(opKindName(a.ops[0]), names[i]);
  }
  ASSERT_EQ(parse({"-o", "all"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.ops.size(), 6u);
  expectBad({"-o", "xor"}, "xor");
  expectBad({"-o", "SUM"}, "SUM");
}

TEST(PerfArgs, Types) {
  PerfArgs a;
  for (int i = 0; i < kNumTypes; ++i) {
    ncclDataType_t t = allTypes()[i];
    ASSERT_EQ(parse({"-d", typeName(t)}, &a), ParseOutcome::kRun) << typeName(t);
    EXPECT_EQ(a.types, std::vector<ncclDataType_t>{t});
  }
  for (const char* alias : {"char", "int", "float32", "fp16", "bf16", "fp8_e4m3", "e5m2", "float64"}) {
    EXPECT_EQ(parse({"-d", alias}, &a), ParseOutcome::kRun) << alias;
  }
  ASSERT_EQ(parse({"-d", "all"}, &a), ParseOutcome::kRun);
  ASSERT_EQ(a.types.size(), 12u);
  EXPECT_EQ(a.types[9], ncclBfloat16);
  EXPECT_EQ(a.types[11], ncclFloat8e5m2);
  expectBad({"-d", "float128"}, "float128");
}

TEST(PerfArgs, Roots) {
  PerfArgs a;
  ASSERT_EQ(parse({"-r", "all"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.root, -1);
  ASSERT_EQ(parse({"-r", "-1"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.root, -1);
  ASSERT_EQ(parse({"-r", "7"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(a.root, 7);
}

TEST(PerfArgs, UnknownFlagsAndStrayArguments) {
  expectBad({"-x", "1"}, "unknown option '-x'");
  expectBad({"--bogus"}, "unknown option '--bogus'");
  expectBad({"--nthread=2"}, "unknown option");
  expectBad({"foo"}, "unexpected argument 'foo'");
  expectBad({"-"}, "unexpected argument");
  expectBad({"-b"}, "missing value after -b");
  expectBad({"--iters"}, "missing value after --iters");
  expectBad({"-J", ""}, "-J");
  expectBad({"--help=yes"}, "takes no value");
}

TEST(PerfArgs, Help) {
  PerfArgs a;
  EXPECT_EQ(parse({"-h"}, &a), ParseOutcome::kHelp);
  EXPECT_EQ(parse({"-b", "8", "--help"}, &a), ParseOutcome::kHelp);
  std::string u = perfUsage("/x/y/all_gather_perf");
  EXPECT_EQ(u.rfind("USAGE: all_gather_perf", 0), 0u);
  for (const char* f : {"-t,", "-g,", "-b,", "-e,", "-i,", "-f,", "-n,", "-m,", "-w,", "-N,", "-p,", "-c,",
                        "-o,", "-d,", "-r,", "-z,", "-y,", "-T,", "-G,", "-C,", "-J,", "-a,", "-R,", "-h,"})
    EXPECT_NE(u.find(f), std::string::npos) << f;
}

TEST(PerfArgs, SweepSizes) {
  PerfArgs a;
  ASSERT_EQ(parse({"-b", "8", "-e", "64K", "-f", "8"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(sweepSizes(a), (std::vector<size_t>{8, 64, 512, 4096, 32768}));
  ASSERT_EQ(parse({"-b", "100", "-e", "400", "-i", "100"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(sweepSizes(a), (std::vector<size_t>{100, 200, 300, 400}));
  ASSERT_EQ(parse({"-b", "1M", "-e", "1M"}, &a), ParseOutcome::kRun);
  EXPECT_EQ(sweepSizes(a), (std::vector<size_t>{1 << 20}));
}

// --- nccl-tests' byte counts and bandwidth formulas, against numbers worked out by hand ---

TEST(PerfColl, CountsPerCollective) {
  // 1 MiB of floats over 4 ranks: 262144 elements, 65536 per rank (already a multiple of 4 = 16 B).
  CollCounts k = collCounts(Coll::AllReduce, 262144, 4, 4);
  EXPECT_EQ(k.paramCount, 262144u);
  EXPECT_EQ(k.sendCount, 262144u);
  EXPECT_EQ(k.recvCount, 262144u);
  k = collCounts(Coll::AllGather, 262144, 4, 4);
  EXPECT_EQ(k.paramCount, 65536u);
  EXPECT_EQ(k.sendCount, 65536u);
  EXPECT_EQ(k.recvCount, 262144u);
  EXPECT_EQ(k.sendInplaceOffset, 65536u);
  EXPECT_EQ(k.recvInplaceOffset, 0u);
  k = collCounts(Coll::ReduceScatter, 262144, 4, 4);
  EXPECT_EQ(k.paramCount, 65536u);
  EXPECT_EQ(k.sendCount, 262144u);
  EXPECT_EQ(k.recvCount, 65536u);
  EXPECT_EQ(k.recvInplaceOffset, 65536u);
  k = collCounts(Coll::AlltoAll, 262144, 4, 4);
  EXPECT_EQ(k.paramCount, 65536u);
  EXPECT_EQ(k.sendCount, 262144u);
  EXPECT_EQ(k.recvCount, 262144u);
  k = collCounts(Coll::Gather, 262144, 4, 4);
  EXPECT_EQ(k.recvCount, 262144u);
  EXPECT_EQ(k.sendInplaceOffset, 65536u);
  k = collCounts(Coll::Scatter, 262144, 4, 4);
  EXPECT_EQ(k.sendCount, 262144u);
  EXPECT_EQ(k.recvInplaceOffset, 65536u);
  // Per-rank chunks round down to whole 16-byte lines: 64 B of floats over 3 ranks = 16 elements, 5 per
  // rank, rounded to 4 (16 B); the size column then says 48 B.
  k = collCounts(Coll::AllGather, 16, 4, 3);
  EXPECT_EQ(k.paramCount, 4u);
  EXPECT_EQ(collBytes(k, 4), 48u);
  // 8 B of floats over 2 ranks: 1 element per rank rounds down to 0.
  k = collCounts(Coll::ReduceScatter, 2, 4, 2);
  EXPECT_EQ(k.paramCount, 0u);
  EXPECT_EQ(collBytes(k, 4), 0u);
  // int8: 16 elements per line.
  k = collCounts(Coll::AlltoAll, 100, 1, 2);
  EXPECT_EQ(k.paramCount, 48u);
  // double: 2 per line; not rounded where no split happens.
  k = collCounts(Coll::Broadcast, 7, 8, 3);
  EXPECT_EQ(k.paramCount, 7u);
  EXPECT_EQ(collBytes(k, 8), 56u);
}

TEST(PerfColl, BusBandwidthFormulas) {
  // 1 ms per operation, 4 ranks, float.
  const double sec = 1e-3;
  double alg = 0, bus = 0;
  // all-reduce of 1 MiB: algbw = 1048576 B / 1 ms = 1.048576 GB/s; busbw = algbw * 2*3/4 = 1.572864.
  collBandwidth(Coll::AllReduce, 262144, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(alg, 1.048576, 1e-9);
  EXPECT_NEAR(bus, 1.572864, 1e-9);
  // all-gather, 65536 floats per rank: total 1 MiB -> algbw 1.048576, busbw * 3/4 = 0.786432.
  collBandwidth(Coll::AllGather, 65536, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(alg, 1.048576, 1e-9);
  EXPECT_NEAR(bus, 0.786432, 1e-9);
  collBandwidth(Coll::ReduceScatter, 65536, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(alg, 1.048576, 1e-9);
  EXPECT_NEAR(bus, 0.786432, 1e-9);
  collBandwidth(Coll::AlltoAll, 65536, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(bus, 0.786432, 1e-9);
  collBandwidth(Coll::Gather, 65536, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(bus, 0.786432, 1e-9);
  collBandwidth(Coll::Scatter, 65536, 4, sec, 4, &alg, &bus);
  EXPECT_NEAR(bus, 0.786432, 1e-9);
  // broadcast, reduce, send/recv of 1 MiB: factor 1.
  for (Coll c : {Coll::Broadcast, Coll::Reduce, Coll::SendRecv}) {
    collBandwidth(c, 262144, 4, sec, 4, &alg, &bus);
    EXPECT_NEAR(alg, 1.048576, 1e-9);
    EXPECT_NEAR(bus, 1.048576, 1e-9);
  }
  // 2 ranks: all-reduce factor 1, all-gather 1/2. 8 GB in 1 s of doubles.
  collBandwidth(Coll::AllReduce, 1000000000, 8, 1.0, 2, &alg, &bus);
  EXPECT_NEAR(alg, 8.0, 1e-9);
  EXPECT_NEAR(bus, 8.0, 1e-9);
  collBandwidth(Coll::AllGather, 500000000, 8, 1.0, 2, &alg, &bus);
  EXPECT_NEAR(alg, 8.0, 1e-9);
  EXPECT_NEAR(bus, 4.0, 1e-9);
  // 3 ranks: all-reduce 4/3, scatter 2/3.
  EXPECT_NEAR(busFactor(Coll::AllReduce, 3), 4.0 / 3, 1e-12);
  EXPECT_NEAR(busFactor(Coll::Scatter, 3), 2.0 / 3, 1e-12);
  EXPECT_NEAR(busFactor(Coll::AllReduce, 8), 1.75, 1e-12);
  // Zero time does not divide by zero.
  collBandwidth(Coll::AllReduce, 1, 4, 0.0, 2, &alg, &bus);
  EXPECT_EQ(alg, 0.0);
}

// --- codecs ---

uint32_t bits(ncclDataType_t t, double v) {
  uint64_t b = 0;
  encodeValue(t, v, &b);
  return static_cast<uint32_t>(b);
}

TEST(PerfTypes, KnownEncodings) {
  EXPECT_EQ(bits(ncclFloat16, 1.0), 0x3C00u);
  EXPECT_EQ(bits(ncclFloat16, -2.0), 0xC000u);
  EXPECT_EQ(bits(ncclFloat16, 2048.0), 0x6800u);
  EXPECT_EQ(bits(ncclFloat16, 65504.0), 0x7BFFu);
  EXPECT_EQ(bits(ncclFloat16, 1e6), 0x7C00u);                   // overflow: infinity
  EXPECT_EQ(bits(ncclFloat16, std::ldexp(1.0, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bits(ncclFloat16, 2049.0), 0x6800u);                // tie to even
  EXPECT_EQ(bits(ncclBfloat16, 1.0), 0x3F80u);
  EXPECT_EQ(bits(ncclBfloat16, 256.0), 0x4380u);
  EXPECT_EQ(bits(ncclFloat8e4m3, 1.0), 0x38u);
  EXPECT_EQ(bits(ncclFloat8e4m3, 16.0), 0x58u);
  EXPECT_EQ(bits(ncclFloat8e4m3, 448.0), 0x7Eu);
  EXPECT_EQ(bits(ncclFloat8e4m3, 1000.0), 0x7Fu);  // no infinity: NaN
  EXPECT_EQ(bits(ncclFloat8e5m2, 1.0), 0x3Cu);
  EXPECT_EQ(bits(ncclFloat8e5m2, 57344.0), 0x7Bu);
  EXPECT_EQ(bits(ncclFloat8e5m2, 1e6), 0x7Cu);
  uint8_t e4 = 0x7E, e5 = 0x7B;
  EXPECT_EQ(decodeValue(ncclFloat8e4m3, &e4), 448.0);
  EXPECT_EQ(decodeValue(ncclFloat8e5m2, &e5), 57344.0);
}

TEST(PerfTypes, SmallIntegersRoundTripExactly) {
  for (int i = 0; i < kNumTypes; ++i) {
    ncclDataType_t t = allTypes()[i];
    int64_t m = std::min<int64_t>(maxExactInt(t), 100000);
    for (int64_t v = 0; v <= m; ++v) {
      unsigned char buf[8] = {0};
      encodeInt(t, v, buf);
      ASSERT_EQ(decodeValue(t, buf), static_cast<double>(v)) << typeName(t) << " " << v;
    }
  }
}

// --- the exactness claim behind -c ---

// Reduces in the type's own precision (decode, combine, round back), in a given rank order, as a real
// implementation would.
double reduceInType(ncclDataType_t t, OpKind op, const std::vector<int64_t>& vals, const std::vector<int>& order) {
  unsigned char acc[8] = {0};
  bool first = true;
  for (int q : order) {
    double v = static_cast<double>(vals[q]);
    if (op == OpKind::MulSum) v *= mulsumScalar(q);
    double a = decodeValue(t, acc);
    double r;
    if (first) {
      r = v;
    } else {
      switch (op) {
        case OpKind::Prod:
          r = a * v;
          break;
        case OpKind::Max:
          r = std::max(a, v);
          break;
        case OpKind::Min:
          r = std::min(a, v);
          break;
        default:
          r = a + v;
          break;
      }
    }
    encodeValue(t, r, acc);
    first = false;
  }
  return decodeValue(t, acc);
}

TEST(PerfData, ReductionsAreExactInAnyOrder) {
  const OpKind ops[] = {OpKind::Sum, OpKind::Prod, OpKind::Max, OpKind::Min, OpKind::MulSum};
  for (int ti = 0; ti < kNumTypes; ++ti) {
    ncclDataType_t t = allTypes()[ti];
    for (OpKind op : ops) {
      for (int n : {2, 3, 5, 9, 17, 64}) {
        DataSpec s;
        s.type = t;
        s.op = op;
        s.nranks = n;
        s.seed = 12345;
        ValueRule rule = valueRule(Coll::AllReduce, t, op, n);
        std::vector<int> fwd(n), rev(n);
        for (int q = 0; q < n; ++q) fwd[q] = q, rev[q] = n - 1 - q;
        for (size_t j = 0; j < 300; ++j) {
          std::vector<int64_t> vals(n);
          for (int q = 0; q < n; ++q) vals[q] = inputValue(s, rule, q, j);
          double a = reduceInType(t, op, vals, fwd), b = reduceInType(t, op, vals, rev);
          ASSERT_EQ(a, b) << typeName(t) << " " << opKindName(op) << " n=" << n << " j=" << j;
          double exact = 0;
          for (int q = 0; q < n; ++q) {
            double v = static_cast<double>(vals[q]) * (op == OpKind::MulSum ? mulsumScalar(q) : 1);
            if (q == 0)
              exact = v;
            else if (op == OpKind::Prod)
              exact *= v;
            else if (op == OpKind::Max)
              exact = std::max(exact, v);
            else if (op == OpKind::Min)
              exact = std::min(exact, v);
            else
              exact += v;
          }
          ASSERT_EQ(a, exact) << typeName(t) << " " << opKindName(op) << " n=" << n << " j=" << j;
        }
      }
    }
  }
}

TEST(PerfData, InputsVaryByRankAndElement) {
  DataSpec s;
  s.type = ncclFloat32;
  s.nranks = 2;
  ValueRule rule = valueRule(Coll::AllGather, ncclFloat32, OpKind::Sum, 2);
  int same = 0;
  for (size_t j = 0; j < 1000; ++j) same += inputValue(s, rule, 0, j) == inputValue(s, rule, 1, j);
  EXPECT_LT(same, 5);
}

TEST(PerfData, CheckerAcceptsRightAndCountsWrong) {
  // A host-simulated all-reduce over 3 ranks: the exact result passes, a damaged element is counted.
  DataSpec s;
  s.coll = Coll::AllReduce;
  s.type = ncclBfloat16;
  s.op = OpKind::Sum;
  s.nranks = 3;
  s.seed = 7;
  s.counts = collCounts(Coll::AllReduce, 1000, 2, 3);
  std::vector<std::vector<uint16_t>> in(3, std::vector<uint16_t>(1000));
  for (int q = 0; q < 3; ++q) fillInput(s, q, in[q].data(), 1000);
  std::vector<uint16_t> out(1000);
  for (size_t j = 0; j < 1000; ++j) {
    double sum = 0;
    for (int q = 0; q < 3; ++q) sum += decodeValue(ncclBfloat16, &in[q][j]);
    encodeValue(ncclBfloat16, sum, &out[j]);
  }
  EXPECT_EQ(checkOutput(s, 1, out.data(), "test"), 0);
  corruptElement(s, out.data());
  EXPECT_EQ(checkOutput(s, 1, out.data(), "test (one element damaged on purpose)"), 1);
  // Reduce: non-roots must keep the fill pattern.
  s.coll = Coll::Reduce;
  s.root = 0;
  std::vector<unsigned char> untouched(2000, kSentinelByte);
  EXPECT_EQ(checkOutput(s, 2, untouched.data(), "test"), 0);
  untouched[10] = 0;
  EXPECT_EQ(checkOutput(s, 2, untouched.data(), "test (non-root written on purpose)"), 1);
}

// Buffers of several million elements are filled and checked in parts on several threads: the parallel fill
// equals the element-by-element definition, every wrong element is counted wherever it falls, and the
// first five reported are the first five in index order, whichever part found them.
TEST(PerfData, LargeBuffersFilledAndCheckedInPartsKeepOrder) {
  DataSpec s;
  s.coll = Coll::Broadcast;  // the output is the root's input: each element's expected value is one hash
  s.type = ncclInt32;
  s.op = OpKind::Sum;
  s.nranks = 1;
  s.seed = 11;
  const size_t n = (size_t(5) << 20) + 3;
  s.counts = collCounts(Coll::Broadcast, n, 4, 1);
  ASSERT_EQ(s.counts.recvCount, n);
  std::vector<int32_t> out(n);
  fillInput(s, 0, out.data(), n);
  const ValueRule rule = valueRule(s.coll, s.type, s.op, s.nranks);
  for (size_t j : {size_t(0), size_t(1) << 20, n / 2, n - 1})
    EXPECT_EQ(out[j], inputValue(s, rule, 0, j)) << "element " << j;
  EXPECT_EQ(checkOutput(s, 0, out.data(), "test"), 0);
  // With two or more parts (>= 2 cores) the first five span the first two parts (boundary near 2.6M).
  const std::vector<size_t> bad = {n - 1, 7, (size_t(4) << 20) + 1, (size_t(3) << 20), 3, (size_t(3) << 20) + 5, 9};
  for (size_t j : bad) out[j] += 1;
  testing::internal::CaptureStderr();
  const int64_t wrong = checkOutput(s, 0, out.data(), "test (damaged on purpose)");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(wrong, static_cast<int64_t>(bad.size()));
  size_t pos = 0;
  for (size_t j : {size_t(3), size_t(7), size_t(9), size_t(3) << 20, (size_t(3) << 20) + 5}) {
    const std::string tag = "element " + std::to_string(j) + " is";
    const size_t at = err.find(tag, pos);
    EXPECT_NE(at, std::string::npos) << tag << " in order in:\n" << err;
    if (at != std::string::npos) pos = at;
  }
  EXPECT_EQ(err.find("element " + std::to_string(n - 1) + " is"), std::string::npos) << "only the first five";
  EXPECT_NE(err.find("7 wrong elements in all"), std::string::npos) << err;
}

TEST(PerfData, AvgOnFloatsIsCheckedWithinRounding) {
  DataSpec s;
  s.coll = Coll::AllReduce;
  s.type = ncclFloat32;
  s.op = OpKind::Avg;
  s.nranks = 3;
  s.counts = collCounts(Coll::AllReduce, 100, 4, 3);
  std::vector<std::vector<float>> in(3, std::vector<float>(100));
  for (int q = 0; q < 3; ++q) fillInput(s, q, in[q].data(), 100);
  std::vector<float> out(100);
  const float third = 1.0f / 3;
  for (size_t j = 0; j < 100; ++j) out[j] = in[0][j] * third + in[1][j] * third + in[2][j] * third;  // pre-multiply
  EXPECT_EQ(checkOutput(s, 0, out.data(), "test"), 0);
  out[50] *= 1.01f;
  EXPECT_EQ(checkOutput(s, 0, out.data(), "test (damaged on purpose)"), out[50] == 0 ? 0 : 1);
}

// Copies of uint8 never expect the fill byte (0xA5), so an unwritten element cannot pass by chance.
TEST(PerfData, Uint8ValuesAvoidTheFillByte) {
  for (Coll c : {Coll::AllGather, Coll::Broadcast, Coll::AllReduce}) {
    DataSpec s;
    s.coll = c;
    s.type = ncclUint8;
    s.op = OpKind::Max;
    s.nranks = 2;
    const ValueRule rule = valueRule(c, ncclUint8, OpKind::Max, 2);
    for (size_t j = 0; j < 100000; ++j) ASSERT_NE(inputValue(s, rule, j % 2, j), int64_t(kSentinelByte));
  }
}

// fp8 e5m2 averaged over 8 ranks: the rounding tolerance is wider than the results' range, yet an output that
// was never written (the fill byte in every element) must still count as wrong, element by element.
TEST(PerfData, AvgOnFp8ManyRanksRejectsUnwrittenOutput) {
  for (ncclDataType_t t : {ncclFloat8e5m2, ncclFloat8e4m3, ncclFloat16}) {
    DataSpec s;
    s.coll = Coll::AllReduce;
    s.type = t;
    s.op = OpKind::Avg;
    s.nranks = 16;
    s.counts = collCounts(Coll::AllReduce, 256, t == ncclFloat16 ? 2 : 1, 16);
    std::vector<unsigned char> out(s.counts.recvCount * (t == ncclFloat16 ? 2 : 1), kSentinelByte);
    EXPECT_EQ(checkOutput(s, 0, out.data(), "test (never written, on purpose)"),
              static_cast<int64_t>(s.counts.recvCount))
        << "type " << static_cast<int>(t);
  }
}

// A rank bound to one core fills and checks on its share of the machine: local rank r of n gets the r-th
// contiguous part, at least one CPU, wrapping when ranks outnumber CPUs.
TEST(PerfData, DataThreadsGetTheirRanksShareOfTheCpus) {
  std::vector<int> cpus;
  for (int i = 0; i < 32; ++i) cpus.push_back(i);
  std::vector<int> want0, want1;
  for (int i = 0; i < 16; ++i) want0.push_back(i), want1.push_back(16 + i);
  EXPECT_EQ(dataCpuSlice(cpus, 0, 2), want0);
  EXPECT_EQ(dataCpuSlice(cpus, 1, 2), want1);
  EXPECT_EQ(dataCpuSlice(cpus, 0, 1), cpus);
  EXPECT_EQ(dataCpuSlice({0, 1, 2}, 2, 4), std::vector<int>{2});   // more ranks than CPUs: one each
  EXPECT_EQ(dataCpuSlice({0, 1, 2}, 3, 4), std::vector<int>{0});   // wrapping
  EXPECT_EQ(dataCpuSlice({4, 5, 6, 7, 20, 21}, 1, 3), (std::vector<int>{6, 7}));
  EXPECT_TRUE(dataCpuSlice({}, 0, 2).empty());
  EXPECT_TRUE(dataCpuSlice(cpus, -1, 2).empty());
}

}  // namespace
