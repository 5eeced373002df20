// The preemption replay: a hand-checked NVL72 case where the two victim choices differ (one rack against a job
// spread over two), and properties over random traces for both policies (every job accounted for, nothing
// preempted by a job of its own priority or lower, the lost work adds up, rackwise never over a cap, no priorities
// no preemption). The priority column of the trace is in trace_test.cc.
#include "rackwise/preemption_replay.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology Build(const SyntheticClusterSpec& spec) {
  absl::StatusOr<Topology> t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

TraceJob Job(std::string id, double submit, double duration, int gpus, int64_t priority,
             std::optional<Locality> locality = std::nullopt) {
  TraceJob j;
  j.id = std::move(id);
  j.submit = submit;
  j.duration = duration;
  j.gpus = gpus;
  j.priority = priority;
  j.locality = locality;
  return j;
}

PreemptionReplayResult Replay(const Topology& t, const std::vector<TraceJob>& jobs, PreemptionPolicy policy) {
  PreemptionReplayOptions o;
  o.policy = policy;
  absl::StatusOr<PreemptionReplayResult> r = SimulatePreemption(t, jobs, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : PreemptionReplayResult{};
}

// Two NVL72 racks filled one after the other by 36 four-GPU jobs of priorities 1 and 2 in turn; a 72-GPU
// `required` job of priority 5 arrives. rackwise clears one rack (18 victims, 1 NVLink domain). cons_tres's order
// takes the 18 priority-1 jobs first, half in each rack: 72 free GPUs in two domains, and tree-bestfit, which knows
// no `required`, spreads the job over both.
TEST(PreemptionReplayTest, RackwiseClearsOneNvl72RackWherePriorityOrderSplitsTheJob) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18});
  const Topology t = Build(spec);
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 36; ++k) jobs.push_back(Job(absl::StrCat("low", k), k, 36'000, 4, 1 + k % 2));
  jobs.push_back(Job("urgent", 3'600, 3'600, 72, 5, Locality::kRequired));

  const PreemptionReplayResult rw = Replay(t, jobs, PreemptionPolicy::kRackwise);
  // The urgent job preempts first; the priority-2 jobs it requeued then preempt priority-1 jobs in the other rack.
  ASSERT_FALSE(rw.preemptions.empty());
  const PreemptionEvent& e = rw.preemptions[0];
  for (size_t k = 1; k < rw.preemptions.size(); ++k) {
    EXPECT_EQ(jobs[rw.preemptions[k].job].priority, 2);
    for (int v : rw.preemptions[k].victims) EXPECT_EQ(jobs[v].priority, 1);
  }
  EXPECT_EQ(jobs[e.job].id, "urgent");
  EXPECT_EQ(e.at, 3'600);
  EXPECT_EQ(e.victims.size(), 18u);
  EXPECT_EQ(e.domains, 1);
  EXPECT_EQ(e.min_domains, 1);
  EXPECT_EQ(rw.metrics.high_mean_wait_s, 0);
  EXPECT_EQ(rw.metrics.completed, 37);

  const PreemptionReplayResult po = Replay(t, jobs, PreemptionPolicy::kPriorityOrder);
  ASSERT_EQ(po.preemptions.size(), 1u);
  EXPECT_EQ(po.preemptions[0].victims.size(), 18u);
  for (int v : po.preemptions[0].victims) EXPECT_EQ(jobs[v].priority, 1) << jobs[v].id;
  EXPECT_EQ(po.preemptions[0].domains, 2);
  EXPECT_EQ(po.metrics.preempting_min_domain_pct, 0);
}

// Random traces on a mixed cluster (an NVL72 rack, H100 racks under a binding cap, a row cap above them).
TEST(PreemptionReplayTest, PropertiesOverRandomTraces) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18});
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 3, 4, 30.0, 8, 3, 80.0});
  const Topology t = Build(spec);
  std::mt19937_64 rng(29);
  for (int round = 0; round < 12; ++round) {
    std::vector<TraceJob> jobs;
    const bool prioritised = round % 4 != 3;
    for (int k = 0; k < 60; ++k) {
      const int sizes[] = {1, 2, 4, 8, 8, 16, 32, 72};
      const std::optional<Locality> localities[] = {std::nullopt, Locality::kRequired, Locality::kPreferred,
                                                    Locality::kNone};
      jobs.push_back(Job(absl::StrCat("j", k), static_cast<double>(rng() % 20'000), 600 + rng() % 20'000,
                         sizes[rng() % 8], prioritised ? static_cast<int64_t>(rng() % 3) : 0, localities[rng() % 4]));
    }
    for (PreemptionPolicy policy : {PreemptionPolicy::kRackwise, PreemptionPolicy::kPriorityOrder}) {
      SCOPED_TRACE(absl::StrCat("round ", round, " ", PreemptionPolicyName(policy)));
      const PreemptionReplayResult r = Replay(t, jobs, policy);
      EXPECT_EQ(r.metrics.completed + r.metrics.rejected, r.metrics.jobs);
      double lost = 0;
      int victims = 0;
      for (const PreemptionEvent& e : r.preemptions) {
        ASSERT_FALSE(e.victims.empty());
        EXPECT_EQ(std::set<int>(e.victims.begin(), e.victims.end()).size(), e.victims.size());
        for (int v : e.victims) {
          EXPECT_LT(jobs[v].priority, jobs[e.job].priority) << jobs[v].id << " preempted by " << jobs[e.job].id;
          EXPECT_GE(e.at, jobs[v].submit);
        }
        EXPECT_GE(e.lost_gpu_hours, 0);
        lost += e.lost_gpu_hours;
        victims += static_cast<int>(e.victims.size());
      }
      EXPECT_NEAR(r.metrics.lost_gpu_hours, lost, 1e-9);
      EXPECT_EQ(r.metrics.victims, victims);
      if (!prioritised) {
        EXPECT_EQ(r.metrics.preemptions, 0);
      }
      if (policy == PreemptionPolicy::kRackwise) {
        EXPECT_EQ(r.metrics.power_violation_kws, 0);
        // `required` jobs that preempt get their fewest domains, as the core promises.
        for (const PreemptionEvent& e : r.preemptions) {
          if (jobs[e.job].locality == Locality::kRequired) {
            EXPECT_LE(e.domains, e.min_domains) << jobs[e.job].id;
          }
        }
      }
    }
  }
}

TEST(PreemptionReplayTest, RefusesMalformedInputsAndNamesPolicies) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2});
  const Topology t = Build(spec);
  std::vector<TraceJob> jobs = {Job("a", 0, 0, 8, 0)};  // duration 0
  EXPECT_EQ(SimulatePreemption(t, jobs, {}).status().code(), absl::StatusCode::kInvalidArgument);
  jobs = {Job("a", 0, 10, 8, kMaxPreemptionPriority + 1)};
  EXPECT_EQ(SimulatePreemption(t, jobs, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParsePreemptionPolicy("priority-order"), PreemptionPolicy::kPriorityOrder);
  EXPECT_EQ(*ParsePreemptionPolicy("rackwise"), PreemptionPolicy::kRackwise);
  EXPECT_FALSE(ParsePreemptionPolicy("cons_tres").ok());
}

}  // namespace
}  // namespace rackwise
