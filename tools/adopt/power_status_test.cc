// rackwise status's rows, from a ledger: every power domain followed by its children and racks, with draw, caps,
// the policy's reserve, headroom (the least over the rack and the domains above it) and the jobs below each.
#include "adopt/power_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rackwise/cluster_description.h"
#include "rackwise/topology.h"

namespace rackwise::adopt {
namespace {

const std::string kSource = RACKWISE_SOURCE_DIR;

const PowerRow& Row(const PowerStatus& s, const std::string& name) {
  for (const PowerRow& r : s.rows) {
    if (r.name == name) return r;
  }
  ADD_FAILURE() << "no row " << name;
  static PowerRow none;
  return none;
}

TEST(PowerStatus, RowsFromTheLedger) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = LoadClusterDescription(kSource + "/examples/demo.yaml", &diagnostics);
  ASSERT_TRUE(d.ok());
  d->mutable_policy()->set_power_reserve_pct(10);
  absl::StatusOr<Topology> topology = Topology::Build(*d);
  ASSERT_TRUE(topology.ok());
  Ledger ledger(*topology);
  NodeId gpu001 = *topology->FindNode("gpu001");
  NodeId gpu005 = *topology->FindNode("gpu005");
  ASSERT_TRUE(ledger.Commit({.id = "a", .nodes = {{.node = gpu001, .gpus = 0xff}}}).ok());
  ASSERT_TRUE(ledger.Commit({.id = "b", .nodes = {{.node = gpu005, .gpus = 0x0f}}}).ok());

  PowerStatus s = StatusFromLedger(ledger);
  EXPECT_EQ(s.cluster, "demo");
  EXPECT_EQ(s.allocations, 2);
  std::vector<std::string> order;
  for (const PowerRow& r : s.rows) order.push_back(r.name);
  EXPECT_THAT(order, testing::ElementsAre("hall-1", "row-a", "r01", "r02", "r03", "r04", "row-b", "nvl01", "nvl02",
                                          "nvl03", "nvl04"));
  const PowerRow& r01 = Row(s, "r01");
  EXPECT_EQ(r01.parent, "row-a");
  EXPECT_DOUBLE_EQ(r01.draw_watts, 4 * 2500 + 8 * 962.5);
  EXPECT_DOUBLE_EQ(r01.cap_watts, 41000);
  EXPECT_DOUBLE_EQ(r01.usable_cap_watts, 36900);
  EXPECT_EQ(r01.jobs, 1);
  EXPECT_EQ(r01.used_gpus, 8);
  EXPECT_EQ(r01.gpus, 32);
  // row-a: 16 idle nodes + 12 GPUs, under 150 kW less the 10% reserve.
  const PowerRow& row_a = Row(s, "row-a");
  EXPECT_DOUBLE_EQ(row_a.draw_watts, 16 * 2500 + 12 * 962.5);
  EXPECT_DOUBLE_EQ(row_a.headroom_watts, 135000 - row_a.draw_watts);
  EXPECT_EQ(row_a.jobs, 2);
  EXPECT_EQ(row_a.parent, "hall-1");
  EXPECT_DOUBLE_EQ(r01.headroom_watts, std::min(36900 - r01.draw_watts, row_a.headroom_watts));
  EXPECT_EQ(Row(s, "hall-1").jobs, 2);
  EXPECT_EQ(Row(s, "nvl01").jobs, 0);

  ledger.SetRackCap(*topology->FindRack("r01"), 18'000'000);  // a cap lowered under the draw: no headroom
  EXPECT_LT(Row(StatusFromLedger(ledger), "r01").headroom_watts, 1);
  EXPECT_THAT(StatusTable(s), testing::HasSubstr("  r01"));
  EXPECT_EQ(StatusJson(s)["rows"][2]["name"], "r01");
}

}  // namespace
}  // namespace rackwise::adopt
