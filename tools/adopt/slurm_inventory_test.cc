// Reading Slurm's configuration as Slurm does: continuations, comments, case-insensitive keys, hostlists,
// NodeName=DEFAULT, gres.conf counts and types, both topology forms; and every problem at its FILE:LINE.
#include "adopt/slurm_inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "adopt/description_skeleton.h"
#include "adopt/k8s_inventory.h"
#include "rackwise/cluster_description.h"

namespace rackwise::adopt {
namespace {

using testing::HasSubstr;

std::vector<std::string> Messages(const Diagnostics& diagnostics) {
  std::vector<std::string> out;
  for (const Diagnostic& d : diagnostics) out.push_back(d.ToString());
  return out;
}

TEST(SlurmInventory, ReadsSlurmSyntax) {
  std::string conf =
      "clustername=alpha   # comment\n"
      "NODENAME=DEFAULT gres=gpu:h100:8 CPUs=112\n"
      "NodeName=gpu[01-02] \\\n"
      "   RealMemory=1000\n"
      "NodeName=\"login1\" Gres=nic:1\n"
      "nodename=nvl1-t[1-2] Gres=gpu:gb200:4(S:0-1),nic:2 Feature=\"a b\"\n"
      "PartitionName=all Nodes=ALL Info=a\\#b  # a comment\n";
  std::string topology =
      "SwitchName=r1 Nodes=gpu[01-02]\nSwitchName=r2 Nodes=nvl1-t[1-2]\nSwitchName=su Switches=r[1-2]\n"
      "BlockName=b1 Nodes=nvl1-t[1-2]\n";
  Diagnostics diagnostics;
  absl::StatusOr<Inventory> inventory = InventoryFromSlurm(
      {.slurm_conf = {"slurm.conf", conf}, .topology_confs = {{"topology.conf", topology}}}, &diagnostics);
  ASSERT_TRUE(inventory.ok()) << testing::PrintToString(Messages(diagnostics));
  EXPECT_EQ(inventory->cluster, "alpha");
  ASSERT_EQ(inventory->nodes.size(), 4u);  // login1 has no GPU
  EXPECT_EQ(inventory->nodes[0].name, "gpu01");
  EXPECT_EQ(inventory->nodes[0].gpus, 8);
  EXPECT_EQ(inventory->nodes[0].gpu_type, "h100");
  EXPECT_EQ(inventory->nodes[0].rack, "r1");
  EXPECT_EQ(inventory->nodes[0].scalable_unit, "su");
  EXPECT_EQ(inventory->nodes[0].nvlink_domain, "");
  EXPECT_EQ(inventory->nodes[0].origin, "slurm.conf:3");
  EXPECT_EQ(inventory->nodes[3].name, "nvl1-t2");
  EXPECT_EQ(inventory->nodes[3].gpus, 4);
  EXPECT_EQ(inventory->nodes[3].gpu_type, "gb200");
  EXPECT_EQ(inventory->nodes[3].nvlink_domain, "b1");
  EXPECT_EQ(inventory->nodes[3].rack, "r2");
}

TEST(SlurmInventory, GresConfFillsCountsAndTypes) {
  std::string conf = "NodeName=g[1-2] Gres=gpu:8\nNodeName=h1 CPUs=4\n";
  std::string gres = "NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-7]\nName=gpu NodeName=h1 Count=2\n";
  Diagnostics diagnostics;
  absl::StatusOr<Inventory> inventory =
      InventoryFromSlurm({.slurm_conf = {"slurm.conf", conf}, .gres_confs = {{"gres.conf", gres}}}, &diagnostics);
  ASSERT_TRUE(inventory.ok()) << testing::PrintToString(Messages(diagnostics));
  ASSERT_EQ(inventory->nodes.size(), 3u);
  EXPECT_EQ(inventory->nodes[1].gpu_type, "a100");
  EXPECT_EQ(inventory->nodes[2].gpus, 2);
}

TEST(SlurmInventory, ProblemsPointAtTheirLine) {
  std::string conf = "NodeName=g[1-2] Gres=gpu:8\nNodeName=g2 Gres=gpu:8\nNodeName=x[3-1] Gres=gpu:2\nbroken\n";
  std::string gres = "\nNodeName=g1 Name=gpu Count=4\n";
  std::string topology = "SwitchName=r1 Nodes=g[1-3]\n";
  Diagnostics diagnostics;
  absl::StatusOr<Inventory> inventory = InventoryFromSlurm({.slurm_conf = {"slurm.conf", conf},
                                                            .gres_confs = {{"gres.conf", gres}},
                                                            .topology_confs = {{"topology.conf", topology}}},
                                                           &diagnostics);
  EXPECT_FALSE(inventory.ok());
  EXPECT_THAT(Messages(diagnostics),
              testing::UnorderedElementsAre(
                  HasSubstr("slurm.conf:2: node 'g2' is declared again (first at slurm.conf:1)"),
                  HasSubstr("slurm.conf:3: NodeName=x[3-1]: "), HasSubstr("slurm.conf:4: expected Key=Value"),
                  HasSubstr("topology.conf:1: node 'g3' is not declared in slurm.conf"),
                  HasSubstr("gres.conf:2: 4 GPUs for node 'g1', but slurm.conf:1 says 8")));
}

TEST(Skeleton, NvlinkDomainMustBeOneRacksNodes) {
  Inventory inventory{.cluster = "c",
                      .nodes = {{.name = "t1", .gpus = 4, .nvlink_domain = "a", .rack = "r1", .origin = "n.json"},
                                {.name = "t2", .gpus = 4, .nvlink_domain = "b", .rack = "r1", .origin = "n.json"},
                                {.name = "t3", .gpus = 4, .nvlink_domain = "a", .rack = "r2", .origin = "n.json"}}};
  Diagnostics diagnostics;
  EXPECT_FALSE(BuildSkeleton(inventory, "n.json", &diagnostics).ok());
  EXPECT_THAT(Messages(diagnostics), testing::ElementsAre(HasSubstr("rack 'r1' holds two NVLink domains"),
                                                          HasSubstr("NVLink domain 'a' spans racks 'r1' and 'r2'")));
}

TEST(K8sInventory, NeedsTheRackLabelAndANumber) {
  std::string json = R"({"items": [
    {"metadata": {"name": "a", "labels": {"nvidia.com/gpu.count": "8"}}},
    {"metadata": {"name": "b", "labels": {"nvidia.com/gpu.count": "eight", "rack": "r1"}}},
    {"metadata": {"name": "cpu", "labels": {}}}]})";
  Diagnostics diagnostics;
  EXPECT_FALSE(InventoryFromK8sNodes({"nodes.json", json}, {.rack = "rack"}, &diagnostics).ok());
  EXPECT_THAT(
      Messages(diagnostics),
      testing::ElementsAre("nodes.json: items[0] (node 'a'): no label rack (--rack-label): every GPU node "
                           "needs its rack",
                           "nodes.json: items[1] (node 'b'): nvidia.com/gpu.count is 'eight', not a GPU count"));
  diagnostics.clear();
  EXPECT_FALSE(InventoryFromK8sNodes({"nodes.json", "[]"}, {}, &diagnostics).ok());
  EXPECT_THAT(Messages(diagnostics), testing::ElementsAre(HasSubstr("not a NodeList")));
}

TEST(SlurmInventory, BlocksOfHgxNodesAreRacksAndOnlyRackScaleTraysShareADomain) {
  std::string conf =
      "ClusterName=mixed\n"
      "NodeName=gpu[01-04] Gres=gpu:h100:8\n"
      "NodeName=nvl1-t[01-18] Gres=gpu:4\n"
      "NodeName=pcie[1-2] Gres=gpu:l40s:4\n";
  std::string topology =
      "BlockName=hgx1 Nodes=gpu[01-04]\nBlockName=nvl1 Nodes=nvl1-t[01-18]\nBlockName=odd Nodes=pcie[1-2]\n"
      "BlockSizes=2,4\n";
  Diagnostics diagnostics;
  absl::StatusOr<Inventory> inventory = InventoryFromSlurm(
      {.slurm_conf = {"slurm.conf", conf}, .topology_confs = {{"topology.conf", topology}}}, &diagnostics);
  ASSERT_TRUE(inventory.ok()) << testing::PrintToString(Messages(diagnostics));
  ASSERT_EQ(inventory->nodes.size(), 24u);
  // An HGX block: a rack of one-node NVLink domains, not one 32-GPU domain.
  EXPECT_EQ(inventory->nodes[0].nvlink_domain, "");
  EXPECT_EQ(inventory->nodes[0].rack, "hgx1");
  EXPECT_FALSE(inventory->nodes[0].nvlink_scope_guessed);
  // 4-GPU trays of no named product: a rack-scale domain.
  EXPECT_EQ(inventory->nodes[4].nvlink_domain, "nvl1");
  EXPECT_FALSE(inventory->nodes[4].nvlink_scope_guessed);
  // 4-GPU nodes of a product that is no rack-scale system: the scope cannot be told, and is tagged.
  EXPECT_EQ(inventory->nodes[22].nvlink_domain, "odd");
  EXPECT_TRUE(inventory->nodes[22].nvlink_scope_guessed);

  std::set<std::string> guessed;
  absl::StatusOr<v1::ClusterDescription> skeleton = BuildSkeleton(*inventory, "slurm.conf", &diagnostics, &guessed);
  ASSERT_TRUE(skeleton.ok()) << testing::PrintToString(Messages(diagnostics));
  ASSERT_EQ(guessed.size(), 1u);
  int node_scoped = 0, rack_scoped = 0;
  for (const v1::NodeType& t : skeleton->node_types()) {
    (t.nvlink() == v1::NVLINK_SCOPE_NODE ? node_scoped : rack_scoped) += 1;
  }
  EXPECT_EQ(node_scoped, 1);  // h100
  EXPECT_EQ(rack_scoped, 2);  // the trays and the guessed block
  const std::string yaml = SkeletonToYaml(*skeleton, "test", guessed);
  EXPECT_THAT(yaml, HasSubstr("nvlink: !guess rack"));
  EXPECT_EQ(yaml.find("nvlink: !guess node"), std::string::npos);
  // The guessed scope is refused by validate at its line, like a guessed figure.
  Diagnostics refused;
  EXPECT_FALSE(ParseClusterDescription(yaml, "skeleton.yaml", &refused).ok());
  bool named = false;
  for (const Diagnostic& d : refused) named |= d.message.find("guessed by rackwise import") != std::string::npos;
  EXPECT_TRUE(named) << testing::PrintToString(Messages(refused));
}

// The other ways a block is told apart: trays whose GRES type names a rack-scale system, untyped 8-GPU HGX nodes
// whose rack a leaf switch already names (the switch's rack stays), and a block mixing both kinds (the scope
// cannot be told, and is tagged for the administrator to confirm).
TEST(SlurmInventory, BlockScopeFromGresTypesAndGpuCounts) {
  std::string conf =
      "ClusterName=blocks\n"
      "NodeName=hgx[1-4] Gres=gpu:8\n"
      "NodeName=gb-t[01-18] Gres=gpu:gb200:4\n"
      "NodeName=mix-a Gres=gpu:8\n"
      "NodeName=mix-t[1-2] Gres=gpu:4\n";
  std::string topology =
      "SwitchName=leaf1 Nodes=hgx[1-4]\n"
      "BlockName=b-hgx Nodes=hgx[1-4]\nBlockName=b-gb Nodes=gb-t[01-18]\nBlockName=b-mix Nodes=mix-a,mix-t[1-2]\n"
      "BlockSizes=3\n";
  Diagnostics diagnostics;
  absl::StatusOr<Inventory> inventory = InventoryFromSlurm(
      {.slurm_conf = {"slurm.conf", conf}, .topology_confs = {{"topology.conf", topology}}}, &diagnostics);
  ASSERT_TRUE(inventory.ok()) << testing::PrintToString(Messages(diagnostics));
  ASSERT_EQ(inventory->nodes.size(), 25u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(inventory->nodes[i].nvlink_domain, "") << i;  // each HGX node its own domain
    EXPECT_EQ(inventory->nodes[i].rack, "leaf1") << i;
  }
  for (int i = 4; i < 22; ++i) {
    EXPECT_EQ(inventory->nodes[i].nvlink_domain, "b-gb") << i;  // one domain of 18 trays
    EXPECT_FALSE(inventory->nodes[i].nvlink_scope_guessed) << i;
  }
  for (int i = 22; i < 25; ++i) {
    EXPECT_EQ(inventory->nodes[i].nvlink_domain, "b-mix") << i;
    EXPECT_TRUE(inventory->nodes[i].nvlink_scope_guessed) << i;
  }
}

}  // namespace
}  // namespace rackwise::adopt
