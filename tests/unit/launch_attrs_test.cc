// launchAttrsFor / pdlSetting: which launch attributes BRAID_PDL gives a kernel launch, on which GPUs, and never
// inside a stream capture.
#include <gtest/gtest.h>

#include "collectives/launch_attrs.h"

using braid::LaunchAttrs;
using braid::launchAttrsFor;
using braid::pdlSetting;

TEST(LaunchAttrs, DefaultIsAProgrammaticLaunchOnHopperOnly) {
  EXPECT_EQ(pdlSetting(1, 9), 1);
  EXPECT_EQ(pdlSetting(1, 10), 1);
  EXPECT_EQ(pdlSetting(1, 8), 0);  // sm_80 has no programmatic launches
  EXPECT_EQ(pdlSetting(7, 7), 0);
  EXPECT_EQ(pdlSetting(0, 9), 0);
  EXPECT_EQ(pdlSetting(15, 9), 7);  // undefined bits drop
  EXPECT_EQ(pdlSetting(-1, 9), 0);  // not "every bit"
  const LaunchAttrs a = launchAttrsFor(pdlSetting(1, 9), false);
  EXPECT_TRUE(a.programmatic);
  EXPECT_FALSE(a.earlyTrigger);
  EXPECT_FALSE(a.remoteSyncDomain);
}

TEST(LaunchAttrs, NothingUnderCapture) {
  for (int pdl = 0; pdl < 8; ++pdl) {
    const LaunchAttrs a = launchAttrsFor(pdl, true);
    EXPECT_FALSE(a.programmatic) << pdl;
    EXPECT_FALSE(a.earlyTrigger) << pdl;
    EXPECT_FALSE(a.remoteSyncDomain) << pdl;
  }
}

TEST(LaunchAttrs, BitsMapToAttributes) {
  EXPECT_FALSE(launchAttrsFor(0, false).programmatic);
  const LaunchAttrs three = launchAttrsFor(3, false);
  EXPECT_TRUE(three.programmatic);
  EXPECT_TRUE(three.earlyTrigger);
  EXPECT_FALSE(three.remoteSyncDomain);
  // The early trigger needs a programmatic launch after it: bit 1 alone gives nothing.
  const LaunchAttrs two = launchAttrsFor(2, false);
  EXPECT_FALSE(two.programmatic);
  EXPECT_FALSE(two.earlyTrigger);
  const LaunchAttrs four = launchAttrsFor(4, false);
  EXPECT_FALSE(four.programmatic);
  EXPECT_TRUE(four.remoteSyncDomain);
  const LaunchAttrs seven = launchAttrsFor(7, false);
  EXPECT_TRUE(seven.programmatic && seven.earlyTrigger && seven.remoteSyncDomain);
}
