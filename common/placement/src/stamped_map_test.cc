// StampedMap against std::map, the plain reading of a map that is emptied between uses: random writes and
// reads over random id spaces, uses of every length (empty ones too), and the epoch's wrap-around.
#include "stamped_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace rackwise::internal {
namespace {

TEST(StampedMapTest, EqualsAMapEmptiedBetweenUses) {
  std::mt19937 rng(15);
  StampedMap<long long> stamped;
  for (int use = 0; use < 2000; ++use) {
    const int ids = 1 + static_cast<int>(rng() % 300);  // the id space grows and shrinks between uses
    stamped.Reset(static_cast<size_t>(ids));
    std::map<int, long long> plain;
    std::vector<int> first_written;
    const int ops = static_cast<int>(rng() % 100);
    for (int op = 0; op < ops; ++op) {
      const int id = static_cast<int>(rng() % static_cast<unsigned>(ids));
      if (!plain.count(id)) first_written.push_back(id);
      const long long add = static_cast<long long>(rng() % 1000);
      stamped[id] += add;
      plain[id] += add;
    }
    ASSERT_EQ(stamped.size(), plain.size());
    ASSERT_EQ(stamped.keys(), first_written);
    for (int id = 0; id < ids; ++id) {
      const auto it = plain.find(id);
      if (it != plain.end()) {
        ASSERT_EQ(stamped[id], it->second) << "use " << use << " id " << id;
      }
    }
    for (int id : first_written) ASSERT_EQ(stamped[id], plain[id]);
  }
}

TEST(StampedMapTest, AValueFromAnEarlierUseNeverShows) {
  StampedMap<int> stamped;
  stamped.Reset(4);
  stamped[2] = 7;
  stamped.Reset(4);
  EXPECT_EQ(stamped.size(), 0u);
  EXPECT_EQ(stamped[2], 0);
  EXPECT_EQ(stamped.keys(), std::vector<int>{2});
}

TEST(StampedMapTest, SurvivesTheEpochWrappingAround) {
  StampedMap<int, uint8_t> stamped;  // the same code with a 256-use epoch
  stamped.Reset(3);
  stamped[1] = 5;  // written in epoch 1
  // 255 more uses bring the epoch back to 1: without the restamp, id 1 would read as written.
  for (int i = 0; i < 255; ++i) stamped.Reset(3);
  EXPECT_EQ(stamped.size(), 0u);
  EXPECT_EQ(stamped[1], 0);
}

}  // namespace
}  // namespace rackwise::internal
