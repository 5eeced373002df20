// rackwise status with steering: the steered draw and held jobs per rack and power domain, and the table's columns.
#include <gtest/gtest.h>

#include <memory>

#include "adopt/power_status.h"
#include "rackwise/cluster_description.h"
#include "rackwise/topology.h"

namespace rackwise::adopt {
namespace {

// examples/demo.yaml (r01: four 8-GPU H100 nodes, 2.5 kW idle and 962.5 W per GPU each).
std::unique_ptr<Topology> Demo() {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d =
      LoadClusterDescription(std::string(RACKWISE_SOURCE_DIR) + "/examples/demo.yaml", &diagnostics);
  EXPECT_TRUE(d.ok());
  absl::StatusOr<Topology> topology = Topology::Build(*d);
  EXPECT_TRUE(topology.ok()) << topology.status();
  return std::make_unique<Topology>(*std::move(topology));
}

TEST(PowerStatusSteering, ARackOverItsLoweredCapShowsItsJobsHeldAndTheSteeredDraw) {
  const std::unique_ptr<Topology> topology = Demo();
  Ledger ledger(*topology);
  const NodeId gpu001 = *topology->FindNode("gpu001"), gpu002 = *topology->FindNode("gpu002");
  ASSERT_TRUE(ledger.Commit({.id = "a", .nodes = {{.node = gpu001, .gpus = 0xff}}}).ok());
  ASSERT_TRUE(ledger.Commit({.id = "b", .nodes = {{.node = gpu002, .gpus = 0xff}}}).ok());
  // r01: 4 x 2.5 kW idle + 16 x 962.5 W = 25.4 kW; its cap lowered to 22 kW (a derated feed).
  const RackId r01 = *topology->FindRack("r01");
  ledger.SetRackCap(r01, 22'000'000);
  PowerStatus s = StatusFromLedger(ledger);
  AddSteering(ledger, &s);
  for (const PowerRow& row : s.rows) {
    ASSERT_TRUE(row.steered_watts.has_value()) << row.name;
    if (row.name == "r01") {
      EXPECT_EQ(row.held_jobs, 2);
      EXPECT_LE(*row.steered_watts, 22000);
      EXPECT_GE(*row.steered_watts, 22000 - 1);
      EXPECT_DOUBLE_EQ(row.counted_watts, 25400);
    } else if (row.kind == "rack") {
      EXPECT_EQ(row.held_jobs, 0) << row.name;
    }
  }
  const std::string table = StatusTable(s);
  EXPECT_NE(table.find("COUNTED    STEERED  HELD"), std::string::npos) << table;
  EXPECT_NE(table.find("      25.4       22.0     2"), std::string::npos) << table;
  EXPECT_EQ(StatusJson(s)["rows"][2]["held_jobs"], 2) << StatusJson(s).dump(2);
}

TEST(PowerStatusSteering, AJobCountedOversubscribedIsListedAndSteeredBackToItsDeclaredWatts) {
  const std::unique_ptr<Topology> topology = Demo();
  Ledger ledger(*topology);
  const NodeId gpu001 = *topology->FindNode("gpu001");
  ASSERT_TRUE(ledger.Commit({.id = "a", .nodes = {{.node = gpu001, .gpus = 0xff}}, .per_gpu = 770'000}).ok());
  v1::ClusterState state;  // as the Slurm plugin publishes it
  v1::OversubscribedAllocation* a = state.add_oversubscribed();
  a->set_id("a");
  a->set_counted_watts_per_gpu(770);
  a->set_declared_watts_per_gpu(962.5);
  PowerStatus s = StatusFromLedger(ledger);
  AddOversubscribed(state, &s);
  AddSteering(ledger, &s);
  for (const PowerRow& row : s.rows) {
    if (row.name != "r01") continue;
    EXPECT_EQ(row.held_jobs, 0);
    EXPECT_DOUBLE_EQ(*row.steered_watts, 4 * 2500 + 8 * 962.5);  // at the declared watts, not the 770 W counted
  }
  const std::string table = StatusTable(s);
  EXPECT_NE(table.find("counted oversubscribed (watts per GPU counted, declared; the GPUs' limit is the declared):\n"
                       "  a 770.0 W, 962.5 W\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(StatusJson(s)["oversubscribed"][0]["declared_watts_per_gpu"], 962.5) << StatusJson(s).dump(2);
}

TEST(PowerStatusSteering, WithoutSteeringTheTableKeepsItsColumns) {
  PowerStatus s{.cluster = "c", .rows = {{.kind = "rack", .name = "r"}}};
  EXPECT_EQ(StatusTable(s).find("STEERED"), std::string::npos);
  EXPECT_FALSE(StatusJson(s)["rows"][0].contains("steered_watts"));
}

}  // namespace
}  // namespace rackwise::adopt
