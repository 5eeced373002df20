// SPDX-License-Identifier: GPL-2.0-or-later
// SlurmTelemetry without Slurm: parked readings are applied once at the next decision, age while parked, and
// each change of state or overdraw is reported once.
#include "slurm_telemetry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "rackwise/synthetic_cluster.h"

namespace rackwise::slurm {
namespace {

Topology OneRack() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2, 20});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok());
  return *std::move(t);
}

PowerReadings Nodes(const Topology& t, double gpu_watts, double age_s) {
  PowerReadings r;
  r.nodes_ok = true;
  for (const Node& n : t.nodes()) r.nodes.push_back({n.name, gpu_watts, age_s});
  return r;
}

TEST(SlurmTelemetryTest, AppliesParkedReadingsOnceAndReportsChangesOnce) {
  Topology t = OneRack();
  Ledger l(t);
  SlurmTelemetry telemetry;
  TelemetrySettings s;
  s.enabled = true;
  s.prometheus_url = "http://127.0.0.1:1";  // never answers; readings are delivered by hand below
  s.interval_s = 3600;
  EXPECT_NE(telemetry.Configure(s).find("telemetry: polling http://127.0.0.1:1"), std::string::npos);
  EXPECT_EQ(telemetry.Configure(s), "");  // unchanged: no restart
  // The poller's first round fails at once (nothing listens on port 1) and is reported; then it sleeps an hour.
  std::vector<std::string> log;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       log.empty() && std::chrono::steady_clock::now() < end;) {
    log = telemetry.ApplyLatest(&l);
    if (log.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("telemetry: stale (0 of 1 racks measured; the others count their estimates); node power "
                        "query failed: prometheus: http://127.0.0.1:1/api/v1/query:"),
            std::string::npos)
      << log[0];
  telemetry.Deliver(Nodes(t, 1000, 1));
  log = telemetry.ApplyLatest(&l);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "telemetry: fresh (1 of 1 racks measured)");
  EXPECT_EQ(l.counted_rack_draw(0), 2 * 2'500'000 + 2 * 1'000'000);
  EXPECT_TRUE(telemetry.applied_round());
  EXPECT_TRUE(telemetry.ApplyLatest(&l).empty());  // nothing new parked
  EXPECT_FALSE(telemetry.applied_round());         // the tracker still describes the last round: not to act on again
  ASSERT_TRUE(telemetry.LimitsToPublish().has_value());  // not steering: the file lists no job
  EXPECT_TRUE(telemetry.LimitsToPublish()->empty());
  telemetry.Deliver(Nodes(t, 1000, 2));
  EXPECT_TRUE(telemetry.ApplyLatest(&l).empty());  // same state: not reported again
  // 16 kW of GPUs on a 20 kW rack with 5 kW idle: overdraw, reported once with the jobs on it.
  ASSERT_TRUE(l.Commit({"4242", {{0, 0b1}}, 0}).ok());
  telemetry.Deliver(Nodes(t, 8000, 1));
  log = telemetry.ApplyLatest(&l);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "OVERDRAW: rack b0-r0000 measures 21.0 kW, above its 20.0 kW cap; jobs on it: 4242; nothing more "
            "is placed there");
  telemetry.Deliver(Nodes(t, 8000, 1));
  EXPECT_TRUE(telemetry.ApplyLatest(&l).empty());
  // A stale source: estimates count again, said once; the alarm clears.
  telemetry.Deliver(Nodes(t, 8000, 61));
  log = telemetry.ApplyLatest(&l);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("telemetry: stale (0 of 1 racks measured; the others count their estimates)"),
            std::string::npos)
      << log[0];
  EXPECT_EQ(log[1], "overdraw cleared: rack b0-r0000 is back under its cap");
  EXPECT_EQ(l.counted_rack_draw(0), l.rack_draw(0));
  TelemetrySettings off;
  EXPECT_EQ(telemetry.Configure(off), "telemetry: off");
}

// With steering on, the limits file is left alone until a round ran on the ledger (after a reload, an empty list
// would send every steered job back to its declared watts for a round); then it lists the jobs held below.
TEST(SlurmTelemetryTest, LimitsToPublishWaitForASteeringRound) {
  Topology t = OneRack();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"4242", {{0, 0b11}}, 0}).ok());
  SlurmTelemetry telemetry;
  TelemetrySettings s;
  s.enabled = true;
  s.prometheus_url = "http://127.0.0.1:1";
  s.interval_s = 3600;
  s.on_overdraw = OverdrawAction::kLowerLimits;
  telemetry.Configure(s);
  EXPECT_FALSE(telemetry.LimitsToPublish().has_value());
  for (int round = 0; round < 3; ++round) {  // two rounds count the job placed before the first reading on top
    telemetry.Deliver(Nodes(t, 1000, 1));
    telemetry.ApplyLatest(&l);
  }
  ASSERT_TRUE(telemetry.LimitsToPublish().has_value());
  EXPECT_TRUE(telemetry.LimitsToPublish()->empty());  // under the cap: nobody held
  telemetry.Deliver(Nodes(t, 8000, 1));               // 21 kW on a 20 kW rack: job 4242 is held below its watts
  telemetry.ApplyLatest(&l);
  ASSERT_TRUE(telemetry.LimitsToPublish().has_value());
  ASSERT_EQ(telemetry.LimitsToPublish()->size(), 1u);
  EXPECT_EQ(telemetry.LimitsToPublish()->front().allocation, "4242");
  telemetry.Reset();  // a reload
  EXPECT_FALSE(telemetry.LimitsToPublish().has_value());
}

}  // namespace
}  // namespace rackwise::slurm
