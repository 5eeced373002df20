// GpuCount against std::popcount, the independent checker: every single-bit and all-ones-below-bit mask, and
// random masks of every density (a bug in one SWAR step shows on some byte pattern, not on a handful of values).
#include "rackwise/gpu_mask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

namespace rackwise {
namespace {

TEST(GpuCountTest, EqualsPopcountOnEdgeMasks) {
  EXPECT_EQ(GpuCount(0), 0);
  EXPECT_EQ(GpuCount(~GpuMask{0}), 64);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(GpuCount(GpuMask{1} << i), 1) << i;
    EXPECT_EQ(GpuCount(FullGpuMask(i)), i) << i;
    EXPECT_EQ(GpuCount(~(GpuMask{1} << i)), 63) << i;
  }
  static_assert(GpuCount(0xff00ff00ff00ff00ULL) == 32);
}

TEST(GpuCountTest, EqualsPopcountOnRandomMasksOfEveryDensity) {
  std::mt19937_64 rng(20261203);
  for (int density = 0; density <= 64; ++density) {
    std::bernoulli_distribution bit(density / 64.0);
    for (int trial = 0; trial < 2000; ++trial) {
      GpuMask m = 0;
      for (int i = 0; i < 64; ++i)
        if (bit(rng)) m |= GpuMask{1} << i;
      ASSERT_EQ(GpuCount(m), std::popcount(m)) << std::hex << m;
    }
  }
}

TEST(GpuCountTest, CountsWhatLowestGpusTakes) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 10000; ++trial) {
    const GpuMask free = rng();
    const int want = static_cast<int>(rng() % 70);
    EXPECT_EQ(GpuCount(LowestGpus(free, want)), std::min(want, std::popcount(free)));
  }
}

}  // namespace
}  // namespace rackwise
