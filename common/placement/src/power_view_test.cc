// The power view: rows in tree order, jobs and GPUs below each row counted once, the measured draw shown only
// where a reading is fresh, and each row's figures the ledger's own.
#include "rackwise/power_view.h"

#include <gtest/gtest.h>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// 2 rows of 2 H100 racks (4 nodes each) under a hall.
Topology TwoRows() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 4, 4, 40.0, 8, 2, 70.0});
  spec.hall_cap_kw = 130;
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(PowerViewTest, RowsFollowTheTreeAndCountJobsOnce) {
  const Topology t = TwoRows();
  Ledger l(t);
  // One job across both racks of the first row, one on a rack of the second.
  ASSERT_TRUE(l.Commit({"wide", {{0, 0xff}, {4, 0x0f}}, 0}).ok());
  ASSERT_TRUE(l.Commit({"small", {{8, 0x03}}, 0}).ok());
  const std::vector<PowerViewRow> rows = BuildPowerView(l);
  ASSERT_EQ(rows.size(), 1u + 2u + 4u);  // hall, 2 rows, 4 racks
  std::vector<std::string> order;
  for (const PowerViewRow& r : rows) order.push_back(r.name);
  EXPECT_EQ(order,
            (std::vector<std::string>{"hall", "b0-row00", "b0-r0000", "b0-r0001", "b0-row01", "b0-r0002", "b0-r0003"}));
  EXPECT_EQ(rows[0].kind, PowerViewRow::Kind::kPowerDomain);
  EXPECT_EQ(rows[0].jobs, 2);  // "wide" counted once though it spans two racks
  EXPECT_EQ(rows[0].used_gpus, 14);
  EXPECT_EQ(rows[0].gpus, 128);
  EXPECT_EQ(rows[1].jobs, 1);
  EXPECT_EQ(rows[2].parent, "b0-row00");
  EXPECT_EQ(rows[2].jobs, 1);
  EXPECT_EQ(rows[2].used_gpus, 8);
  for (const PowerViewRow& r : rows) {
    EXPECT_FALSE(r.measured.has_value()) << r.name;
    EXPECT_EQ(r.counted, r.draw) << r.name;    // no telemetry: decisions count the estimate
    EXPECT_EQ(r.usable_cap, r.cap) << r.name;  // no reserve
    if (r.kind == PowerViewRow::Kind::kRack) {
      const RackId id = *t.FindRack(r.name);
      EXPECT_EQ(r.draw, l.rack_draw(id));
      EXPECT_EQ(r.headroom, l.RackHeadroom(id));
    }
  }
}

TEST(PowerViewTest, MeasuredDrawShowsOnlyWhereARackHasAReading) {
  const Topology t = TwoRows();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"job", {{0, 0xff}}, 0}).ok());
  std::vector<std::optional<Milliwatts>> readings(t.racks().size());
  readings[0] = l.rack_draw(0) + 5'000'000;                // 5 kW above the estimate
  l.SetMeasuredDraw(readings, 0, /*count_recent=*/false);  // the job is already in the reading
  for (const PowerViewRow& r : BuildPowerView(l)) {
    if (r.name == "b0-r0000") {
      ASSERT_TRUE(r.measured.has_value());
      EXPECT_EQ(*r.measured, *readings[0]);
      EXPECT_EQ(r.counted, *readings[0]);  // above the estimate: the reading counts
    } else if (r.kind == PowerViewRow::Kind::kRack) {
      EXPECT_FALSE(r.measured.has_value()) << r.name;
    } else if (r.name == "b0-row00" || r.name == "hall") {
      EXPECT_EQ(r.counted, r.draw + 5'000'000) << r.name;  // the excess reaches every domain above the rack
    }
  }
}

}  // namespace
}  // namespace rackwise
