// The device build's kernel table (dev_kernels.h): every reducing collective has a SIMPLE kernel, an LL kernel and
// a one-shot-over-peers kernel for each of NCCL's datatypes and reductions, so the tuner can choose LL for any of
// them; signed and unsigned integers get kernels of their own where the sign changes the result; SIMPLE's rarer
// reductions share a kernel per type. Asked of the host
// side of the library only: no GPU is needed.
#include <gtest/gtest.h>

#include <string>

#include "device/dev_kernels.h"

using braid::CollType;
using braid::RedKind;

namespace {

constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,    ncclUint32,     ncclInt64,
                                     ncclUint64,  ncclFloat16, ncclFloat32,  ncclFloat64,    ncclBfloat16,
                                     ncclFloat8e4m3, ncclFloat8e5m2};
constexpr RedKind kKinds[] = {RedKind::Sum, RedKind::Prod, RedKind::Max, RedKind::Min, RedKind::PreMulSum,
                              RedKind::SumPostDiv};
constexpr CollType kReducing[] = {CollType::AllReduce, CollType::Reduce, CollType::ReduceScatter};

// SumPostDiv is the integer average; floats average through PreMulSum.
bool exists(ncclDataType_t t, RedKind k) { return k != RedKind::SumPostDiv || !braid::dtypeIsFloat(t); }

std::string name(CollType c, ncclDataType_t t, RedKind k) {
  return std::string(braid::collName(c)) + " " + braid::dtypeName(t) + " kind " + std::to_string(static_cast<int>(k));
}

}  // namespace

TEST(DevKernelTable, EveryTypeAndReductionHasSimpleLlAndPeersKernels) {
  if (braid::devKernelsMinimal()) GTEST_SKIP() << "minimal kernel preset (-DBRAID_KERNELS=minimal): float only";
  int checked = 0;
  for (ncclDataType_t t : kTypes)
    for (RedKind k : kKinds) {
      if (!exists(t, k)) continue;
      for (CollType c : kReducing) {
        EXPECT_NE(braid::devCollKernel(c, t, k), nullptr) << name(c, t, k);
        EXPECT_NE(braid::devCollKernelLL(c, t, k), nullptr) << name(c, t, k);
        ++checked;
      }
      EXPECT_NE(braid::devOneShotPeersKernel(t, k), nullptr) << name(CollType::AllReduce, t, k);
    }
  EXPECT_EQ(checked, 3 * (12 * 5 + 6));  // SumPostDiv: the six integer types
}

TEST(DevKernelTable, SignedAndUnsignedMaxRunDifferentKernels) {
  if (braid::devKernelsMinimal()) GTEST_SKIP() << "minimal kernel preset (-DBRAID_KERNELS=minimal): float only";
  const std::pair<ncclDataType_t, ncclDataType_t> pairs[] = {
      {ncclInt8, ncclUint8}, {ncclInt32, ncclUint32}, {ncclInt64, ncclUint64}};
  for (const auto& p : pairs)
    for (RedKind k : {RedKind::Max, RedKind::Min, RedKind::SumPostDiv}) {
      EXPECT_NE(braid::devCollKernelLL(CollType::AllReduce, p.first, k),
                braid::devCollKernelLL(CollType::AllReduce, p.second, k))
          << braid::dtypeName(p.first) << " kind " << static_cast<int>(k);
      EXPECT_NE(braid::devOneShotPeersKernel(p.first, k), braid::devOneShotPeersKernel(p.second, k))
          << braid::dtypeName(p.first) << " kind " << static_cast<int>(k);
    }
}

// SIMPLE compiles sums (and floating pre-multiplied sums, NCCL's average of floats) as kernels of their own; the other
// reductions of a type share one kernel that reads the reduction at run time, which keeps the device build small.
// Integer products and pre-multiplied sums run on the unsigned type; max, min and the average need the sign.
TEST(DevKernelTable, RareReductionsShareTheirTypesSimpleKernel) {
  if (braid::devKernelsMinimal()) GTEST_SKIP() << "minimal kernel preset (-DBRAID_KERNELS=minimal): float only";
  const auto simple = [](ncclDataType_t t, RedKind k) { return braid::devCollKernel(CollType::AllReduce, t, k); };
  for (ncclDataType_t t : kTypes) {
    const void* shared = simple(t, RedKind::Max);
    EXPECT_EQ(simple(t, RedKind::Min), shared) << braid::dtypeName(t);
    EXPECT_NE(simple(t, RedKind::Sum), shared) << braid::dtypeName(t);
    const bool ownPreMul = t == ncclFloat32 || t == ncclFloat16 || t == ncclBfloat16;
    if (braid::dtypeIsFloat(t)) {
      EXPECT_EQ(simple(t, RedKind::Prod), shared) << braid::dtypeName(t);
      EXPECT_EQ(simple(t, RedKind::PreMulSum) == shared, !ownPreMul) << braid::dtypeName(t);
      EXPECT_EQ(simple(t, RedKind::SumPostDiv), nullptr) << braid::dtypeName(t);
    } else {
      EXPECT_EQ(simple(t, RedKind::SumPostDiv), shared) << braid::dtypeName(t);
    }
  }
  const std::pair<ncclDataType_t, ncclDataType_t> pairs[] = {
      {ncclInt8, ncclUint8}, {ncclInt32, ncclUint32}, {ncclInt64, ncclUint64}};
  for (const auto& p : pairs) {
    for (RedKind k : {RedKind::Sum, RedKind::Prod, RedKind::PreMulSum})
      EXPECT_EQ(simple(p.first, k), simple(p.second, k))
          << braid::dtypeName(p.first) << " kind " << static_cast<int>(k);
    EXPECT_EQ(simple(p.second, RedKind::Prod), simple(p.second, RedKind::Max)) << braid::dtypeName(p.second);
    EXPECT_NE(simple(p.first, RedKind::Max), simple(p.second, RedKind::Max)) << braid::dtypeName(p.first);
  }
}

// LL128 keeps its kernels for the copies and the float, half and bfloat16 sums (the cases it is chosen for over
// NVLink); the other reductions run LL or SIMPLE there.
TEST(DevKernelTable, Ll128ServesCopiesAndFloatSums) {
  if (braid::devKernelsMinimal()) GTEST_SKIP() << "minimal kernel preset (-DBRAID_KERNELS=minimal): float only";
  EXPECT_NE(braid::devCollKernelLL128(CollType::AllGather, ncclInt8, RedKind::Sum), nullptr);
  for (ncclDataType_t t : {ncclFloat32, ncclFloat16, ncclBfloat16})
    EXPECT_NE(braid::devCollKernelLL128(CollType::AllReduce, t, RedKind::Sum), nullptr) << braid::dtypeName(t);
}

TEST(DevKernelTable, FloatKernelsExistInEveryPreset) {
  for (RedKind k : {RedKind::Sum, RedKind::Prod, RedKind::Max, RedKind::Min, RedKind::PreMulSum}) {
    EXPECT_NE(braid::devCollKernelLL(CollType::AllReduce, ncclFloat32, k), nullptr) << static_cast<int>(k);
    EXPECT_NE(braid::devOneShotPeersKernel(ncclFloat32, k), nullptr) << static_cast<int>(k);
  }
  EXPECT_EQ(braid::devCollKernelLL(CollType::AllReduce, ncclFloat32, RedKind::Sum),
            braid::devCollKernelLL(CollType::Reduce, ncclFloat32, RedKind::Sum));
}
