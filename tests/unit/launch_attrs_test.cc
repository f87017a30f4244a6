// launchAttrsFor / pdlSetting: which launch attributes BRAID_PDL gives a kernel launch, on which GPUs and kernel
// builds, and never inside a stream capture.
#include <gtest/gtest.h>

#include "collectives/launch_attrs.h"

using braid::LaunchAttrs;
using braid::launchAttrsFor;
using braid::pdlSetting;

TEST(LaunchAttrs, DefaultIsAProgrammaticLaunchOnHopperKernelsOnly) {
  EXPECT_EQ(pdlSetting(1, 9, 90), 1);
  EXPECT_EQ(pdlSetting(1, 10, 100), 1);
  EXPECT_EQ(pdlSetting(1, 8, 80), 0);  // sm_80 has no programmatic launches
  EXPECT_EQ(pdlSetting(3, 7, 70), 0);
  // A Hopper GPU running kernels JIT-compiled from compute_80 PTX: their wait is compiled out.
  EXPECT_EQ(pdlSetting(1, 9, 80), 0);
  EXPECT_EQ(pdlSetting(1, 9, 0), 0);  // unknown
  EXPECT_EQ(pdlSetting(0, 9, 90), 0);
  EXPECT_EQ(pdlSetting(7, 9, 90), 3);   // undefined bits drop
  EXPECT_EQ(pdlSetting(-1, 9, 90), 0);  // not "every bit"
  const LaunchAttrs a = launchAttrsFor(pdlSetting(1, 9, 90), false);
  EXPECT_TRUE(a.programmatic);
  EXPECT_FALSE(a.earlyTrigger);
}

TEST(LaunchAttrs, NothingUnderCapture) {
  for (int pdl = 0; pdl < 4; ++pdl) {
    const LaunchAttrs a = launchAttrsFor(pdl, true);
    EXPECT_FALSE(a.programmatic) << pdl;
    EXPECT_FALSE(a.earlyTrigger) << pdl;
  }
}

TEST(LaunchAttrs, BitsMapToAttributes) {
  EXPECT_FALSE(launchAttrsFor(0, false).programmatic);
  const LaunchAttrs three = launchAttrsFor(3, false);
  EXPECT_TRUE(three.programmatic);
  EXPECT_TRUE(three.earlyTrigger);
  // The early trigger needs a programmatic launch after it: bit 1 alone gives nothing.
  const LaunchAttrs two = launchAttrsFor(2, false);
  EXPECT_FALSE(two.programmatic);
  EXPECT_FALSE(two.earlyTrigger);
}
