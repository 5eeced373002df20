// The candidate-list cache must be invisible: a cached list decodes, resolves and answers exactly as a fresh
// scan does, whatever bytes surround it, and answers stay valid JSON whatever the names were.
#include "candidate_nodes.h"

#include <random>

#include <gtest/gtest.h>

#include "extender_wire.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s {
namespace {

Topology SmallTopology() {
  SyntheticClusterSpec spec;
  spec.name = "t";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 8, 8});  // 64 nodes
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

std::string Body(const std::vector<std::string>& names, absl::string_view after = "") {
  return absl::StrCat(R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":)", Json(names).dump(), after, "}");
}

TEST(CandidateNodes, EchoesAsciiTokensAndReescapesTheRest) {
  auto args = ParseExtenderArgs("{\"NodeNames\":[\"a\\/b\",\"n\\u00e9\",\"n\xc3\xa9\",\"x\xff\"]}");
  ASSERT_TRUE(args.ok()) << args.status();
  const CandidateNodes& c = args->candidate_nodes();
  ASSERT_EQ(c.size(), 4u);
  // ASCII tokens are echoed as sent: they decode to the same name.
  EXPECT_EQ(c.json(0), R"("a\/b")");
  EXPECT_EQ(c.name(1), "n\xc3\xa9");
  EXPECT_EQ(c.json(1), R"("n\u00e9")");
  EXPECT_EQ(c.name(2), "n\xc3\xa9");
  EXPECT_EQ(c.json(2), "\"n\xc3\xa9\"");      // not ASCII: escaped afresh (valid UTF-8 kept)
  EXPECT_EQ(c.json(3), "\"x\xef\xbf\xbd\"");  // invalid UTF-8 never reaches an answer
  EXPECT_EQ(CandidateNodes({"q\""}).json(0), R"("q\"")");
}

TEST(CandidateNodes, ResolvesInOrderOutOfOrderAndUnknown) {
  Topology t = SmallTopology();
  std::vector<std::string> names = {t.nodes()[5].name, t.nodes()[6].name, "nope", t.nodes()[0].name,
                                    t.nodes()[63].name};
  CandidateNodes c(names);
  EXPECT_FALSE(c.resolved());
  c.Resolve(t);
  ASSERT_TRUE(c.resolved());
  EXPECT_EQ(c.ids(), (std::vector<NodeId>{5, 6, kNoId, 0, 63}));
}

TEST(CandidateNodeCache, RepeatedListIsAHitAndDecodesTheSame) {
  Topology t = SmallTopology();
  CandidateNodeCache cache(&t);
  std::vector<std::string> all;
  for (const Node& n : t.nodes()) all.push_back(n.name);
  auto first = ParseExtenderArgs(Body(all), &cache);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(cache.misses(), 1u);
  // The same list, followed by other keys: a hit, and the scanner carries on after it.
  auto second = ParseExtenderArgs(Body(all, R"(,"Nodes":null)"), &cache);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(second->candidates.get(), first->candidates.get());
  EXPECT_EQ(second->candidate_nodes().names(), all);
  EXPECT_TRUE(second->candidate_nodes().resolved());
  // A hit still checks what follows the list.
  EXPECT_FALSE(ParseExtenderArgs(Body(all, R"(,"Nodes":nul)"), &cache).ok());
  EXPECT_FALSE(ParseExtenderArgs(absl::StrCat(R"({"NodeNames":)", Json(all).dump()), &cache).ok());
}

TEST(CandidateNodeCache, PrefixesAndNearMissesAreNotConfused) {
  Topology t = SmallTopology();
  CandidateNodeCache cache(&t);
  std::vector<std::string> all;
  for (const Node& n : t.nodes()) all.push_back(n.name);
  std::vector<std::string> prefix(all.begin(), all.begin() + 40);
  std::vector<std::string> changed = all;
  changed[63] = "other";
  for (int round = 0; round < 3; ++round) {
    for (const auto* list : {&all, &prefix, &changed}) {
      auto args = ParseExtenderArgs(Body(*list), &cache);
      ASSERT_TRUE(args.ok());
      EXPECT_EQ(args->candidate_nodes().names(), *list);
      std::vector<NodeId> fresh;
      CandidateNodes(*list).ResolveInto(t, &fresh);
      EXPECT_EQ(args->candidate_nodes().ids(), fresh);
    }
  }
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_EQ(cache.hits(), 6u);
}

TEST(CandidateNodeCache, BoundedAndLeastRecentlyUsedGoesFirst) {
  Topology t = SmallTopology();
  CandidateNodeCache cache(&t, /*max_entries=*/2);
  std::mt19937 rng(3);
  std::vector<std::vector<std::string>> lists(3);
  for (auto& l : lists) {
    for (const Node& n : t.nodes()) {
      if (rng() % 4 != 0) l.push_back(n.name);
    }
  }
  for (const auto& l : lists) ASSERT_TRUE(ParseExtenderArgs(Body(l), &cache).ok());
  EXPECT_EQ(cache.misses(), 3u);
  ASSERT_TRUE(ParseExtenderArgs(Body(lists[2]), &cache).ok());  // still held
  ASSERT_TRUE(ParseExtenderArgs(Body(lists[1]), &cache).ok());
  EXPECT_EQ(cache.hits(), 2u);
  ASSERT_TRUE(ParseExtenderArgs(Body(lists[0]), &cache).ok());  // evicted
  EXPECT_EQ(cache.misses(), 4u);
  // Short lists are not cached at all.
  ASSERT_TRUE(ParseExtenderArgs(Body({"a", "b"}), &cache).ok());
  ASSERT_TRUE(ParseExtenderArgs(Body({"a", "b"}), &cache).ok());
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(CandidateNodeCache, FilterAnswersAreIdenticalWithAndWithoutTheCache) {
  Topology t = SmallTopology();
  CandidateNodeCache cache(&t);
  std::vector<std::string> names = {"unknown-1"};
  for (const Node& n : t.nodes()) names.push_back(n.name);
  const std::string body = Body(names);
  for (int round = 0; round < 2; ++round) {
    auto cached = ParseExtenderArgs(body, &cache);
    auto fresh = ParseExtenderArgs(body);
    ASSERT_TRUE(cached.ok() && fresh.ok());
    FilterResult r;
    r.feasible = {1, 5, 64};
    r.unresolvable.push_back({0, r.AddReason("unknown")});
    r.failed.push_back({2, r.AddReason("busy")});
    EXPECT_EQ(EncodeFilterResult(r, *cached), EncodeFilterResult(r, *fresh));
    EXPECT_EQ(EncodeHostPriorityList(cached->candidate_nodes(), {1, 2, 3}),
              EncodeHostPriorityList(fresh->candidate_nodes(), {1, 2, 3}));
  }
  EXPECT_EQ(cache.hits(), 1u);
}

}  // namespace
}  // namespace rackwise::k8s
