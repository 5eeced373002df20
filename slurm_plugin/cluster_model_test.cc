// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for the description-vs-slurm.conf check and the Slurm index <-> NodeId map of the select plugin.
#include "cluster_model.h"

#include <gtest/gtest.h>

namespace rackwise::slurm {
namespace {

// Two HGX racks (2 nodes each, 8 GPUs) and one small NVL rack (3 trays of 4 GPUs).
v1::ClusterDescription Description() {
  v1::ClusterDescription d;
  d.set_cluster("t");
  auto* hgx = d.add_node_types();
  hgx->set_name("hgx");
  hgx->set_gpus(8);
  hgx->set_nvlink(v1::NVLINK_SCOPE_NODE);
  hgx->set_gpu_watts(700);
  hgx->set_node_watts(10200);
  hgx->set_idle_watts(2500);
  auto* nvl = d.add_node_types();
  nvl->set_name("nvl");
  nvl->set_gpus(4);
  nvl->set_nvlink(v1::NVLINK_SCOPE_RACK);
  nvl->set_gpu_watts(1200);
  nvl->set_node_watts(6600);
  nvl->set_idle_watts(1500);
  auto add_rack = [&](const char* name, const char* type, const char* nodes, double kw) {
    auto* r = d.add_racks();
    r->set_name(name);
    r->set_type(type);
    r->set_nodes(nodes);
    r->set_power_cap_kw(kw);
  };
  add_rack("r1", "hgx", "g[1-2]", 41);
  add_rack("r2", "hgx", "g[3-4]", 41);
  add_rack("n1", "nvl", "t[1-3]", 40);
  return d;
}

std::vector<SlurmNode> Nodes() {
  return {{"login", 0}, {"g1", 8}, {"g2", 8}, {"g3", 8}, {"g4", 8}, {"t1", 4}, {"t2", 4}, {"t3", 4}};
}

TEST(GpusInGresString, CountsGpuEntriesOnly) {
  EXPECT_EQ(GpusInGresString("gpu:8"), 8);
  EXPECT_EQ(GpusInGresString("gpu:h100:8(S:0-1)"), 8);
  EXPECT_EQ(GpusInGresString("gpu:a:4,gpu:b:4"), 8);
  EXPECT_EQ(GpusInGresString("gpu"), 1);
  EXPECT_EQ(GpusInGresString("gpu:h100"), 1);
  EXPECT_EQ(GpusInGresString("mps:100,nic:2"), 0);
  EXPECT_EQ(GpusInGresString(""), 0);
  EXPECT_EQ(GpusInGresString("gpu:h100:x:y"), -1);
}

TEST(ClusterModel, MapsSlurmIndicesToNodes) {
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::Build(Description(), "rackwise.yaml", Nodes());
  ASSERT_TRUE(model.ok()) << model.status();
  const ClusterModel& m = **model;
  EXPECT_EQ(m.ToNode(0), kNoId);  // login: no GPUs, not described
  for (int i = 1; i < 8; ++i) {
    const NodeId n = m.ToNode(i);
    ASSERT_NE(n, kNoId);
    EXPECT_EQ(m.ToSlurm(n), i);
    EXPECT_EQ(m.topology().nodes()[n].name, Nodes()[i].name);
  }
  EXPECT_EQ(m.ToNode(-1), kNoId);
  EXPECT_EQ(m.ToNode(99), kNoId);
  EXPECT_EQ(m.ledger().allocation_count(), 0u);
  EXPECT_EQ(&m.ledger().topology(), &m.topology());
  EXPECT_EQ(&m.static_ledger().topology(), &m.topology());
}

TEST(ClusterModel, RefusesNodesMissingFromSlurmConf) {
  std::vector<SlurmNode> nodes = Nodes();
  nodes[3].name = "other";
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::Build(Description(), "rackwise.yaml", nodes);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(model.status().message());
  EXPECT_NE(message.find("rackwise.yaml disagrees with slurm.conf"), std::string::npos) << message;
  EXPECT_NE(message.find("node g3 (rack r2) is not defined in slurm.conf"), std::string::npos) << message;
  EXPECT_NE(message.find("slurm.conf node other has GPUs but no rack lists it"), std::string::npos) << message;
}

TEST(ClusterModel, RefusesGpuCountMismatch) {
  std::vector<SlurmNode> nodes = Nodes();
  nodes[6].gpus = 8;
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::Build(Description(), "rackwise.yaml", nodes);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("node t2: slurm.conf configures 8 GPUs"), std::string::npos)
      << model.status();
}

TEST(ClusterModel, ListsAtMostEightProblems) {
  std::vector<SlurmNode> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back({"x" + std::to_string(i), 8});
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::Build(Description(), "f.yaml", nodes);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("more"), std::string::npos) << model.status();
}

}  // namespace
}  // namespace rackwise::slurm
