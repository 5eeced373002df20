// RackPowerOrder against a plain count over every rack, on random racks rebuilt after random changes: a few racks
// moved (the insertion sort's case), most racks moved (the full sort's), and a different number of racks.
#include "rack_power_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

namespace rackwise {
namespace {

struct Racks {
  int types = 0, width = 0;
  std::vector<Milliwatts> own, chain;
  std::vector<int> at_least;  // [rack][type * width + f], non-increasing in f
  std::vector<RackPowerOrder::RackRow> Rows() const {
    std::vector<RackPowerOrder::RackRow> rows;
    const size_t size = static_cast<size_t>(types) * width;
    for (size_t r = 0; r < own.size(); ++r)
      rows.push_back({own[r], std::min(own[r], chain[r]), absl::MakeConstSpan(&at_least[r * size], size)});
    return rows;
  }
};

// Room values from a small range, so that ties (broken by rack id) and exact hits of `need` are common.
Milliwatts RandomRoom(std::mt19937& rng) { return static_cast<Milliwatts>(rng() % 12) * 1000 - 2000; }

void Randomize(Racks* racks, size_t rack, std::mt19937& rng) {
  racks->own[rack] = RandomRoom(rng);
  racks->chain[rack] = rng() % 4 == 0 ? std::numeric_limits<Milliwatts>::max() : RandomRoom(rng);
  for (int type = 0; type < racks->types; ++type) {
    int running = 0;
    for (int f = racks->width; f-- > 0;) {
      running += static_cast<int>(rng() % 3);
      racks->at_least[(rack * racks->types + type) * racks->width + f] = running;
    }
  }
}

void ExpectCountsAsAPlainPass(const RackPowerOrder& order, const Racks& racks) {
  for (int type = 0; type < racks.types; ++type) {
    for (int least = 0; least < racks.width; ++least) {
      for (Milliwatts need = -3000; need <= 11000; need += 500) {
        RackPowerOrder::Counts plain;
        for (size_t r = 0; r < racks.own.size(); ++r) {
          const int nodes = racks.at_least[(r * racks.types + type) * racks.width + least];
          plain.all += nodes;
          if (racks.own[r] < need) plain.below_own += nodes;
          if (std::min(racks.own[r], racks.chain[r]) < need) plain.below_least += nodes;
        }
        const RackPowerOrder::Counts kept = order.Count(type, least, need);
        ASSERT_EQ(kept.below_own, plain.below_own) << "type " << type << " least " << least << " need " << need;
        ASSERT_EQ(kept.below_least, plain.below_least) << "type " << type << " least " << least << " need " << need;
        ASSERT_EQ(kept.all, plain.all);
      }
    }
  }
}

TEST(RackPowerOrderTest, CountsEqualAPlainPassAfterEveryRebuild) {
  std::mt19937 rng(1203);
  RackPowerOrder order;
  for (int trial = 0; trial < 40; ++trial) {
    Racks racks;
    racks.types = 1 + static_cast<int>(rng() % 3);
    racks.width = 2 + static_cast<int>(rng() % 8);
    const size_t count = 1 + rng() % 60;
    racks.own.resize(count);
    racks.chain.resize(count);
    racks.at_least.resize(count * racks.types * racks.width);
    for (size_t r = 0; r < count; ++r) Randomize(&racks, r, rng);
    for (int round = 0; round < 12; ++round) {
      std::vector<RackPowerOrder::RackRow> rows = racks.Rows();
      order.Rebuild(rows, racks.types, racks.width);
      ASSERT_TRUE(order.Check(rows).ok()) << order.Check(rows);
      ExpectCountsAsAPlainPass(order, racks);
      // Next round: one rack, a few, or nearly all of them change.
      const size_t changes = round % 3 == 0 ? 1 : round % 3 == 1 ? 1 + rng() % 4 : count;
      for (size_t c = 0; c < changes; ++c) Randomize(&racks, rng() % count, rng);
    }
  }
}

TEST(RackPowerOrderTest, CheckFindsAStaleOrder) {
  Racks racks{1, 3, {1000, 5000}, {std::numeric_limits<Milliwatts>::max(), 2000}, {2, 1, 0, 3, 3, 1}};
  RackPowerOrder order;
  order.Rebuild(racks.Rows(), racks.types, racks.width);
  EXPECT_TRUE(order.Check(racks.Rows()).ok());
  racks.own[0] = 9000;  // moved without a rebuild
  EXPECT_FALSE(order.Check(racks.Rows()).ok());
  racks.own[0] = 1000;
  racks.at_least[1] = 2;  // a count changed without a rebuild
  EXPECT_FALSE(order.Check(racks.Rows()).ok());
}

TEST(RackPowerOrderTest, OutOfRangeQuestionsCountNothing) {
  Racks racks{1, 3, {1000}, {2000}, {4, 2, 1}};
  RackPowerOrder order;
  order.Rebuild(racks.Rows(), racks.types, racks.width);
  EXPECT_EQ(order.Count(0, 3, 5000).all, 0);
  EXPECT_EQ(order.Count(1, 0, 5000).all, 0);
  EXPECT_EQ(order.Count(0, 0, 5000).all, 4);
  EXPECT_EQ(order.Count(0, 1, 1500).below_own, 2);
  EXPECT_EQ(order.Count(0, 1, 1000).below_own, 0);  // a room equal to the need is enough
}

}  // namespace
}  // namespace rackwise
