// SPDX-License-Identifier: GPL-2.0-or-later
// policy.oversubscribe_pct in the Slurm face, without slurmctld: the telemetry state the plugin holds decides with
// the core whether a job counts at less than it declares (stale telemetry: not, and why); the ledger holds the
// counted watts; steering is told the declared ones, so the steered limits file carries those and a job goes back
// up to them, never above; and the ledger the plugin publishes brings the counted watts back after a restart.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "published_ledger.h"
#include "rackwise/cluster_description.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/oversubscription.h"
#include "rackwise/synthetic_cluster.h"
#include "slurm_telemetry.h"
#include "steered_limits.h"

namespace rackwise::slurm {
namespace {

// One rack of two HGX H100 nodes (5 kW idle, 962.5 W per GPU by default) under 20 kW, oversubscribed by 20%.
v1::ClusterDescription Description() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2, 20});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_oversubscribe_pct(20);
  d.mutable_telemetry()->set_prometheus_url("http://127.0.0.1:1");  // the knob needs steering
  d.mutable_telemetry()->set_node_power_query("q");
  d.mutable_telemetry()->set_on_overdraw(v1::OVERDRAW_ACTION_LOWER_LIMITS);
  return d;
}

PowerReadings Nodes(const Topology& t, double gpu_watts) {
  PowerReadings r;
  r.nodes_ok = true;
  for (const Node& n : t.nodes()) r.nodes.push_back({n.name, gpu_watts, 1});
  return r;
}

TelemetrySettings Steering() {
  TelemetrySettings s;
  s.enabled = true;
  s.prometheus_url = "http://127.0.0.1:1";  // never answers; readings are delivered by hand
  s.interval_s = 3600;
  s.on_overdraw = OverdrawAction::kLowerLimits;
  return s;
}

const PlacementRequest kJob{.id = "4242", .gpus = 8, .gpus_per_node = 8};  // declares no watts

TEST(SlurmOversubscriptionTest, CountsLessOnlyWithFreshTelemetryAndSteersBackToTheDeclaredWatts) {
  const Topology t = *Topology::Build(Description());
  Ledger l(t);
  SlurmTelemetry telemetry;
  telemetry.Configure(Steering());
  // The poller's first round fails at once (nothing listens on port 1): stale, and the core says why.
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       telemetry.tracker().state() != TelemetryState::kStale && std::chrono::steady_clock::now() < end;) {
    if (telemetry.ApplyLatest(&l).empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const OversubscribedWatts stale = CountOversubscribed(t, kJob, telemetry.settings(), telemetry.tracker().state());
  EXPECT_FALSE(stale.applied);
  EXPECT_EQ(stale.why_not, "oversubscription is off while telemetry is stale: jobs count their declared watts");

  telemetry.Deliver(Nodes(t, 1000));
  telemetry.ApplyLatest(&l);
  ASSERT_EQ(telemetry.tracker().state(), TelemetryState::kFresh);
  const OversubscribedWatts count = CountOversubscribed(t, kJob, telemetry.settings(), telemetry.tracker().state());
  ASSERT_TRUE(count.applied) << count.why_not;
  OversubscribedAllocations book;
  book.Placed(kJob.id, count);
  // What the plugin commits for the job: its record declares no watts, the book says what it was counted at.
  ASSERT_TRUE(l.Commit({kJob.id, {{0, 0xff}}, book.Counted(kJob.id, 0)}).ok());
  EXPECT_EQ(l.Find(kJob.id)->per_gpu, 770'000);
  EXPECT_EQ(l.PerGpu(*l.Find(kJob.id), 0), 770'000);  // below the 962.5 W its GPUs are limited to

  SteeringFacts facts;
  book.AddDeclaredTo(&facts);
  for (int round = 0; round < 3; ++round) {  // 21 kW on the 20 kW rack: the job is held below
    telemetry.Deliver(Nodes(t, 8000));
    telemetry.ApplyLatest(&l, facts);
  }
  ASSERT_TRUE(telemetry.LimitsToPublish().has_value());
  ASSERT_EQ(telemetry.LimitsToPublish()->size(), 1u);
  const LimitChange held = telemetry.LimitsToPublish()->front();
  EXPECT_EQ(held.from_per_gpu, 962'500);
  EXPECT_LT(held.to_per_gpu, 962'500);
  SteeredLimitsBook lines;
  const std::vector<SteeredLimit> file = lines.Lines(l, *telemetry.LimitsToPublish());
  ASSERT_EQ(file.size(), 1u);
  EXPECT_EQ(file[0].declared_mw, 962'500);  // what the node sets back, not the 770 W counted
  EXPECT_EQ(file[0].limit_mw, held.to_per_gpu);

  for (int round = 0; round < 3; ++round) {  // back under the cap: up to the declared watts, never above
    telemetry.Deliver(Nodes(t, 1000));
    telemetry.ApplyLatest(&l, facts);
  }
  EXPECT_TRUE(telemetry.LimitsToPublish()->empty());  // absent: the job runs at its declared watts
  EXPECT_EQ(
      telemetry.tracker().steered_limits().count(kJob.id) ? telemetry.tracker().steered_limits().at(kJob.id) : 962'500,
      962'500);
}

TEST(SlurmOversubscriptionTest, ARestartCountsWhatWasCountedFromThePublishedLedger) {
  const v1::ClusterDescription description = Description();
  const std::string yaml = ClusterDescriptionToYaml(description);
  const Topology t = *Topology::Build(description);
  const std::string dir = ::testing::TempDir() + "/rackwise-oversubscribed-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + kPublishedLedgerFileName;
  EXPECT_EQ(ReadOversubscribedJobs(path, yaml, "rackwise.yaml").status().code(), absl::StatusCode::kNotFound);

  Ledger before(t);
  OversubscribedAllocations book;
  book.Placed(kJob.id, CountOversubscribed(t, kJob, Steering(), TelemetryState::kFresh));
  ASSERT_TRUE(before.Commit({kJob.id, {{0, 0xff}}, book.Counted(kJob.id, 0)}).ok());
  std::ofstream(path) << ClusterStateToYaml(PublishedLedger(before, book));  // what the publisher writes

  absl::StatusOr<OversubscribedAllocations> restarted = ReadOversubscribedJobs(path, yaml, "rackwise.yaml");
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  Ledger after(t);  // rebuilt from the job records, which carry only the declared watts (none here)
  ASSERT_TRUE(after.Commit({kJob.id, {{0, 0xff}}, restarted->Counted(kJob.id, 0)}, CommitMode::kRecover).ok());
  EXPECT_EQ(after.rack_draw(0), before.rack_draw(0));
  SteeringFacts facts;
  restarted->AddDeclaredTo(&facts);
  EXPECT_EQ(facts.declared.at(kJob.id), 962'500);
  // A job that declares other watts than it was counted for (not the same job any more) counts what it declares.
  EXPECT_EQ(restarted->Counted(kJob.id, 700'000), 700'000);

  // A file that does not read is an error naming its line (the plugin logs it, and jobs count what they declare).
  std::ofstream(path) << "oversubscribed:\n  - id: '4242'\n    declared_watts_per_gpu: 500\n"
                         "    counted_watts_per_gpu: 600\n";
  absl::StatusOr<OversubscribedAllocations> bad = ReadOversubscribedJobs(path, yaml, "rackwise.yaml");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path + ":4: oversubscribed[0] '4242': counted_watts_per_gpu 600 must be below"),
            std::string::npos)
      << bad.status();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rackwise::slurm
