// TournamentTree against a pass over every value, after every one of many random updates.
#include "tournament_tree.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace rackwise {
namespace {

template <typename Better>
void CheckAgainstAPass(long long none, Better better) {
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 2u, 3u, 5u, 8u, 13u, 100u}) {
    TournamentTree<long long, Better> tree(none);
    tree.Assign(n);
    std::vector<long long> values(n, none);
    EXPECT_EQ(tree.Top(), none);
    for (int step = 0; step < 500 && n > 0; ++step) {
      const size_t i = rng() % n;
      values[i] = static_cast<long long>(rng() % 2001) - 1000;
      if (rng() % 7 == 0) values[i] = none;  // a value taken out again
      tree.Set(i, values[i]);
      long long best = none;
      for (long long v : values)
        if (better(v, best)) best = v;
      ASSERT_EQ(tree.Top(), best) << "n " << n << " step " << step;
      ASSERT_EQ(tree.at(i), values[i]);
    }
  }
}

TEST(TournamentTreeTest, LeastEqualsAPassOverEveryValue) {
  CheckAgainstAPass(std::numeric_limits<long long>::max(), std::less<long long>());
}

TEST(TournamentTreeTest, MostEqualsAPassOverEveryValue) {
  CheckAgainstAPass(std::numeric_limits<long long>::min(), std::greater<long long>());
}

}  // namespace
}  // namespace rackwise
