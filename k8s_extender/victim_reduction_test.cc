// kube-scheduler's proposals reduced to the core's victims, checked on random ledgers against what must hold
// whatever the core chooses: only proposed pods on their own node, pods without GPUs kept as proposed, never a pod
// of the preemptor's priority or above, and the answer really makes room (Placer::Place on the ledger without the
// victims, an independent verdict); a group's answer is one node, its other victims to evict.
#include "victim_reduction.h"

#include "gang_reservations.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s {
namespace {

struct Scenario {
  std::unique_ptr<Topology> topology;
  std::unique_ptr<Ledger> ledger;
  std::map<std::string, KnownVictim> known;     // by UID
  std::map<std::string, std::string> node_of;   // UID -> node name
  std::map<std::string, MetaVictims> proposed;  // kube-scheduler's proposals
};

// An H100 rack under a binding cap and an NVL72 rack, filled with random pods (1, 2, 4 or 8 GPUs) of random
// priority and age; every node proposes every pod on it, plus a CPU pod the ledger does not know.
Scenario RandomScenario(std::mt19937_64& rng) {
  Scenario s;
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 4, 30.0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok());
  s.topology = std::make_unique<Topology>(std::move(*t));
  s.ledger = std::make_unique<Ledger>(*s.topology);
  int next = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(s.topology->nodes().size()); ++n) {
    const Node& node = s.topology->nodes()[n];
    int used = 0;
    while (used < node.gpus && rng() % 4 != 0) {
      const int sizes[] = {1, 2, 4, 8};
      const int gpus = std::min(sizes[rng() % 4], node.gpus - used);
      Allocation a;
      a.id = absl::StrCat("pod/ml/p", next);
      a.nodes.push_back({n, ((GpuMask{1} << gpus) - 1) << used});
      if (!s.ledger->Commit(a, CommitMode::kEnforce).ok()) break;  // the cap binds
      used += gpus;
      const std::string uid = absl::StrCat("uid-", next++);
      s.known[uid] = {absl::StrCat("ml/p", next - 1), a.id, static_cast<int64_t>(rng() % 3) * 100,
                      static_cast<int64_t>(rng() % 36'000'000)};
      s.node_of[uid] = node.name;
      s.proposed[node.name].pod_uids.push_back(uid);
    }
    if (s.proposed.contains(node.name)) s.proposed[node.name].pod_uids.push_back("uid-cpu-" + node.name);
  }
  return s;
}

TEST(VictimReduction, AnswersOnlyProposedVictimsThatMakeRoom) {
  std::mt19937_64 rng(29);
  int kept_nodes = 0, group_answers = 0;
  for (int round = 0; round < 40; ++round) {
    Scenario s = RandomScenario(rng);
    const PreemptionProposal proposal{&s.proposed, 150, [&](const std::string& uid) -> std::optional<KnownVictim> {
                                        auto it = s.known.find(uid);
                                        if (it == s.known.end()) return std::nullopt;
                                        return it->second;
                                      }};
    PlacementRequest pod;
    pod.id = "pod/ml/urgent";
    pod.gpus = pod.gpus_per_node = (round % 2) ? 8 : 4;
    absl::StatusOr<ReducedPreemption> alone = ReduceVictimsPerNode(*s.ledger, pod, proposal);
    ASSERT_TRUE(alone.ok()) << alone.status();
    for (const auto& [node, kept] : alone->nodes) {
      ++kept_nodes;
      ASSERT_FALSE(kept.pod_uids.empty());
      Ledger without = *s.ledger;
      const std::vector<std::string>& offered = s.proposed.at(node).pod_uids;
      for (const std::string& uid : kept.pod_uids) {
        EXPECT_NE(std::find(offered.begin(), offered.end(), uid), offered.end()) << uid << " not proposed on " << node;
        if (!s.known.contains(uid)) continue;
        EXPECT_LT(s.known[uid].priority, 150);
        without.Release(s.known[uid].allocation_id);
      }
      EXPECT_NE(std::find(kept.pod_uids.begin(), kept.pod_uids.end(), "uid-cpu-" + node), kept.pod_uids.end());
      PlacementRequest there = pod;
      there.allowed_nodes = {*s.topology->FindNode(node)};
      absl::StatusOr<PlacementOutcome> placed = Placer::Place(without, there);
      ASSERT_TRUE(placed.ok());
      EXPECT_TRUE(std::holds_alternative<PlacementDecision>(*placed)) << "no room on " << node;
    }
    // The same proposals for a group of twelve 4-GPU pods, `required` (48 GPUs: most of the NVL72 rack).
    PlacementRequest per_pod;
    per_pod.gpus = 4;
    per_pod.locality = Locality::kRequired;
    per_pod.gpus_per_node = 0;
    const PlacementRequest group = GroupRequest("ml/group/g", 12, per_pod);
    absl::StatusOr<ReducedPreemption> gang = ReduceVictimsForGroup(*s.ledger, group, proposal);
    ASSERT_TRUE(gang.ok()) << gang.status();
    if (gang->nodes.empty()) continue;
    ++group_answers;
    ASSERT_EQ(gang->nodes.size(), 1u);
    Ledger without = *s.ledger;
    const auto& [node, kept] = *gang->nodes.begin();
    for (const std::string& uid : kept.pod_uids) {
      if (!s.known.contains(uid)) continue;
      EXPECT_EQ(s.node_of[uid], node);
      without.Release(s.known[uid].allocation_id);
    }
    for (const std::string& key : gang->evict) {
      auto it = std::find_if(s.known.begin(), s.known.end(), [&](const auto& k) { return k.second.pod_key == key; });
      ASSERT_NE(it, s.known.end()) << key;
      EXPECT_NE(s.node_of[it->first], node) << key << " is on the answered node";
      EXPECT_LT(it->second.priority, 150);
      without.Release(it->second.allocation_id);
    }
    absl::StatusOr<PlacementOutcome> placed = Placer::Place(without, group);
    ASSERT_TRUE(placed.ok());
    EXPECT_TRUE(std::holds_alternative<PlacementDecision>(*placed)) << "the group has no room";
  }
  EXPECT_GT(kept_nodes, 20);  // the test is not blind
  EXPECT_GT(group_answers, 5);
}

TEST(VictimReduction, LostWorkIsGpusTimesHoursWithinBounds) {
  EXPECT_DOUBLE_EQ(LostGpuHours(8, 3'600'000), 8);
  EXPECT_DOUBLE_EQ(LostGpuHours(4, -5), 0);
  EXPECT_DOUBLE_EQ(LostGpuHours(131'072, int64_t{1} << 50), kMaxLostGpuHours);
}

}  // namespace
}  // namespace rackwise::k8s
