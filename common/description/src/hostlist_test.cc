// Tests for Slurm hostlist expansion and compression, including a property test: for random sets of names,
// expanding the compressed form gives back the same names (in the documented order).
#include "rackwise/hostlist.h"

#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rackwise {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(std::string_view hostlist) {
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist);
  EXPECT_TRUE(names.ok()) << hostlist << ": " << names.status();
  return names.ok() ? *names : std::vector<std::string>{};
}

std::string ExpandError(std::string_view hostlist, size_t max_names = 1'000'000) {
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist, max_names);
  EXPECT_FALSE(names.ok()) << hostlist << " expanded to " << names->size() << " names";
  return names.ok() ? "" : std::string(names.status().message());
}

TEST(ExpandHostlist, PlainNamesAndCommaLists) {
  EXPECT_THAT(Expand("node1"), ElementsAre("node1"));
  EXPECT_THAT(Expand("a,b,c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Expand("a, b"), ElementsAre("a", "b"));  // spaces around items are tolerated
}

TEST(ExpandHostlist, RangesWithZeroPaddingFromTheLowerBound) {
  EXPECT_THAT(Expand("gpu[001-003]"), ElementsAre("gpu001", "gpu002", "gpu003"));
  EXPECT_THAT(Expand("n[8-11]"), ElementsAre("n8", "n9", "n10", "n11"));
  EXPECT_THAT(Expand("n[09-11]"), ElementsAre("n09", "n10", "n11"));
  EXPECT_THAT(Expand("n[98-100]"), ElementsAre("n98", "n99", "n100"));
}

TEST(ExpandHostlist, CommaListsInsideBrackets) {
  EXPECT_THAT(Expand("a[1-3,7]"), ElementsAre("a1", "a2", "a3", "a7"));
  EXPECT_THAT(Expand("a[1,03-04],b[01-02]x"), ElementsAre("a1", "a03", "a04", "b01x", "b02x"));
}

TEST(ExpandHostlist, SeveralBracketGroupsInOneNameLeftmostVariesSlowest) {
  EXPECT_THAT(Expand("r[1-2]n[01-02]"), ElementsAre("r1n01", "r1n02", "r2n01", "r2n02"));
  EXPECT_THAT(Expand("r[1,3]-n[1-2]-g[0]"), ElementsAre("r1-n1-g0", "r1-n2-g0", "r3-n1-g0", "r3-n2-g0"));
}

TEST(ExpandHostlist, ManyGroupsInOneName) {
  std::string many = "n";
  for (int i = 0; i < 127; ++i) many += "[1-2]";  // 2^127 names: refused by the count, not by trying
  EXPECT_THAT(ExpandError(many), HasSubstr("more than"));
  many = "n";
  for (int i = 0; i < 200; ++i) many += "[1]";
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(many);
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0], "n" + std::string(200, '1'));
}

TEST(ExpandHostlist, NamesAreAtMost255Characters) {
  EXPECT_TRUE(ExpandHostlist(std::string(255, 'a')).ok());
  EXPECT_THAT(ExpandError(std::string(256, 'a')), HasSubstr("longer than 255"));
  EXPECT_THAT(ExpandError(std::string(250, 'a') + "[1-100000]"), HasSubstr("longer than 255"));
}

TEST(ExpandHostlist, ErrorsSayWhatIsWrong) {
  EXPECT_THAT(ExpandError("gpu[001-004"), HasSubstr("'[' without ']'"));
  EXPECT_THAT(ExpandError("gpu001-004]"), HasSubstr("']' without '['"));
  EXPECT_THAT(ExpandError("gpu[[1-2]]"), HasSubstr("nested"));
  EXPECT_THAT(ExpandError("gpu[5-3]"), HasSubstr("ends below its start"));
  EXPECT_THAT(ExpandError("a,,b"), HasSubstr("empty node name"));
  EXPECT_THAT(ExpandError(""), HasSubstr("empty node name"));
  EXPECT_THAT(ExpandError("a,"), HasSubstr("empty node name"));
  EXPECT_THAT(ExpandError("gpu[]"), HasSubstr("empty brackets"));
  EXPECT_THAT(ExpandError("gpu[1,]"), HasSubstr("empty element"));
  EXPECT_THAT(ExpandError("gpu[a-b]"), HasSubstr("not a number"));
  EXPECT_THAT(ExpandError("gpu[1-]"), HasSubstr("empty number"));
  EXPECT_THAT(ExpandError("gpu 1"), HasSubstr("invalid character"));
  EXPECT_THAT(ExpandError("gpu[1-1234567890123456789012]"), HasSubstr("number too long"));
}

TEST(ExpandHostlist, HugeExpansionsAreRefusedBeforeAllocating) {
  EXPECT_THAT(ExpandError("n[0-999999999999999999]"), HasSubstr("more than 1000000 names"));
  EXPECT_THAT(ExpandError("a[0-999]b[0-999]c[0-999]"), HasSubstr("more than"));
  EXPECT_THAT(ExpandError("n[1-11]", 10), HasSubstr("more than 10 names"));
  EXPECT_THAT(ExpandError("n[1-6],m[1-5]", 10), HasSubstr("more than 10 names"));
  EXPECT_TRUE(ExpandHostlist("n[1-10]", 10).ok());
}

TEST(CompressHostlist, BuildsRangesPerPrefix) {
  EXPECT_EQ(CompressHostlist({"gpu001", "gpu002", "gpu003", "gpu004", "gpu007"}), "gpu[001-004,007]");
  EXPECT_EQ(CompressHostlist({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(CompressHostlist({"n09", "n10"}), "n[09-10]");
  EXPECT_EQ(CompressHostlist({"login", "gpu1"}), "login,gpu1");
  EXPECT_EQ(CompressHostlist({"r1n01", "r1n02", "r2n01"}), "r1n[01-02],r2n01");
  EXPECT_EQ(CompressHostlist({"a1x", "a2x", "a3y"}), "a[1-2]x,a3y");
  EXPECT_EQ(CompressHostlist({"n1", "n1", "n2"}), "n[1-2]");  // duplicates dropped
  EXPECT_EQ(CompressHostlist({}), "");
}

TEST(CompressHostlist, KeepsOrderOfFirstAppearanceWithinAPrefix) {
  EXPECT_EQ(CompressHostlist({"n3", "n1", "n2"}), "n[3,1-2]");
  EXPECT_THAT(Expand(CompressHostlist({"n3", "m1", "n1"})), ElementsAre("n3", "n1", "m1"));
}

TEST(CompressHostlist, MixedPaddingStaysExact) {
  std::vector<std::string> names = {"n1", "n01", "n001", "n2", "n02", "n10", "n100"};
  EXPECT_EQ(Expand(CompressHostlist(names)), names);
}

// The documented order of Expand(Compress(x)): names grouped by prefix/suffix in order of the group's first
// appearance, each group in order of first appearance, duplicates dropped. For names drawn from one prefix
// this is simply x without duplicates.
TEST(CompressHostlistProperty, ExpandOfCompressGivesTheSameNames) {
  std::mt19937 rng(20261129);
  const std::vector<std::string> prefixes = {"gpu", "nvl01-t", "r1n", "node-", "a", ""};
  const std::vector<std::string> suffixes = {"", "", "", "x", "-ib"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::string> names;
    int count = std::uniform_int_distribution<int>(1, 60)(rng);
    int groups = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < count; ++i) {
      int g = std::uniform_int_distribution<int>(0, groups - 1)(rng);
      const std::string& prefix = prefixes[(trial + g) % prefixes.size()];
      const std::string& suffix = suffixes[(trial + 2 * g) % suffixes.size()];
      int value = std::uniform_int_distribution<int>(0, 130)(rng);
      int width = std::uniform_int_distribution<int>(1, 4)(rng);
      std::string digits = std::to_string(value);
      if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
      if (prefix.empty() && suffix.empty() && rng() % 2) digits = "h" + digits;  // avoid bare numbers only
      names.push_back(prefix + digits + suffix);
    }
    std::string compressed = CompressHostlist(names);
    absl::StatusOr<std::vector<std::string>> expanded = ExpandHostlist(compressed);
    ASSERT_TRUE(expanded.ok()) << compressed << ": " << expanded.status();

    std::set<std::string> want(names.begin(), names.end());
    std::set<std::string> got(expanded->begin(), expanded->end());
    ASSERT_EQ(got, want) << compressed;
    ASSERT_EQ(expanded->size(), want.size()) << "duplicates in " << compressed;
    if (groups == 1) {
      std::vector<std::string> unique;
      std::set<std::string> seen;
      for (const std::string& n : names) {
        if (seen.insert(n).second) unique.push_back(n);
      }
      // One prefix but possibly names without digits ("h" names) that form their own groups: compare when the
      // grouping is trivial.
      bool trivial = std::all_of(unique.begin(), unique.end(), [&](const std::string& n) {
        return n.rfind(prefixes[trial % prefixes.size()], 0) == 0;
      });
      if (trivial && !prefixes[trial % prefixes.size()].empty()) {
        ASSERT_EQ(*expanded, unique) << compressed;
      }
    }
  }
}

TEST(CompressHostlistProperty, SortedRangesCompressToOneGroupAndRoundTrip) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    int lo = std::uniform_int_distribution<int>(0, 500)(rng);
    int len = std::uniform_int_distribution<int>(1, 200)(rng);
    std::string hostlist = "gpu[" + std::to_string(lo) + "-" + std::to_string(lo + len - 1) + "]";
    std::vector<std::string> names = Expand(hostlist);
    ASSERT_EQ(static_cast<int>(names.size()), len);
    EXPECT_EQ(CompressHostlist(names), len == 1 ? "gpu" + std::to_string(lo) : hostlist);
  }
}

}  // namespace
}  // namespace rackwise
