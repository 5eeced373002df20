// Shadow times and the `preferred` hold-out rule (rackwise/shadow_time.h): hand-checked cases, and a property
// over random clusters: FewestDomainsIn names the first expected end at which the job fits its fewest domains,
// leaves the ledger as it was, and Place keeps a `preferred` job to those domains exactly while the rule says.
#include "rackwise/shadow_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

absl::StatusOr<Topology> Nvl72(int racks, double wait_s) {
  v1::ClusterDescription d = BuildSyntheticCluster({"x", {{ReferenceSystem::kGb200Nvl72, racks, 18, 0, 8, 0, 0}}, 0});
  d.mutable_policy()->set_preferred_wait_s(wait_s);
  return Topology::Build(d);
}

// `gpus` GPUs of rack `rack`, 4 per tray from its first tray.
Allocation Busy(const Topology& t, const std::string& id, RackId rack, int gpus) {
  Allocation a{id, {}, 0};
  for (int i = 0; gpus > 0; ++i, gpus -= 4) a.nodes.push_back({t.racks()[rack].nodes[i], 0xf});
  return a;
}

PlacementRequest Preferred(int gpus, double waited_s) {
  PlacementRequest r;
  r.id = "p";
  r.gpus = gpus;
  r.gpus_per_node = 4;
  r.locality = Locality::kPreferred;
  r.waited_seconds = waited_s;
  return r;
}

TEST(PreferredHoldsOutTest, HoldsOutForTheWaitThenWhileTheFewestDomainsAreExpectedWithinTwiceIt) {
  PlacementPolicy p;
  p.preferred_wait_seconds = 600;
  EXPECT_TRUE(PreferredHoldsOut(p, 599, std::nullopt));
  EXPECT_FALSE(PreferredHoldsOut(p, 600, std::nullopt));  // not known: the hold-out alone decides
  EXPECT_TRUE(PreferredHoldsOut(p, 600, 600.0));          // expected by twice the wait
  EXPECT_TRUE(PreferredHoldsOut(p, 1000, 200.0));
  EXPECT_FALSE(PreferredHoldsOut(p, 1000, 201.0));
  EXPECT_FALSE(PreferredHoldsOut(p, 1300, 0.0));           // past twice the wait: only a long job holds
  EXPECT_TRUE(PreferredHoldsOut(p, 600, 3600.0, 3600.0));  // within its own time limit past the hold-out
  EXPECT_FALSE(PreferredHoldsOut(p, 600, 3601.0, 3600.0));
  EXPECT_TRUE(PreferredHoldsOut(p, 1300, 2900.0, 3600.0));      // 1300 + 2900 <= 600 + 3600
  EXPECT_FALSE(PreferredHoldsOut(p, 1300, 3000.0, 3600.0));     // slipped past: bounded from reaching the head
  EXPECT_FALSE(PreferredHoldsOut(p, 1300, std::nullopt, 1e9));  // not expected at all
  p.preferred_wait_seconds = 0;                                 // the default: no hold-out at all
  EXPECT_FALSE(PreferredHoldsOut(p, 0, 0.0, 1e9));
}

TEST(FewestDomainsInTest, TheFirstEndThatFreesTheFewestDomainsAndTheLedgerIsRestored) {
  // Two NVL72 racks, 40 GPUs busy in each: 48 GPUs fit two racks now, one rack once `b` ends at 500.
  absl::StatusOr<Topology> t = Nvl72(2, 600);
  ASSERT_TRUE(t.ok()) << t.status();
  Ledger l(*t);
  ASSERT_TRUE(l.Commit(Busy(*t, "a", 0, 40)).ok());
  ASSERT_TRUE(l.Commit(Busy(*t, "b", 1, 40)).ok());
  const std::vector<ExpectedEnd> ends = {{"b", 500}, {"a", 1000}};
  absl::StatusOr<std::optional<double>> in = FewestDomainsIn(l, Preferred(48, 0), ends, 64);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(in->has_value());
  EXPECT_EQ(**in, 500);
  EXPECT_EQ(l.allocation_count(), 2u);
  EXPECT_TRUE(l.CheckInvariants().ok());
  EXPECT_EQ(l.domain_free_gpus(t->nodes()[t->racks()[1].nodes[0]].domain), 32);
  // 144 GPUs need both racks whole: only once both have ended; 200 never fit.
  in = FewestDomainsIn(l, Preferred(144, 0), ends, 64);
  ASSERT_TRUE(in.ok() && in->has_value());
  EXPECT_EQ(**in, 1000);
  in = FewestDomainsIn(l, Preferred(200, 0), ends, 64);
  ASSERT_TRUE(in.ok());
  EXPECT_FALSE(in->has_value());
  EXPECT_EQ(FewestDomainsIn(l, Preferred(0, 0), ends, 64).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FewestDomainsInTest, PlaceKeepsAPreferredJobWaitingWhileItsFewestDomainsAreExpectedSoon) {
  absl::StatusOr<Topology> t = Nvl72(2, 600);
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  ASSERT_TRUE(l.Commit(Busy(*t, "a", 0, 40)).ok());
  ASSERT_TRUE(l.Commit(Busy(*t, "b", 1, 40)).ok());
  PlacementRequest r = Preferred(48, 700);
  r.fewest_domains_in_seconds = 500;  // 700 + 500 <= 1200: wait for one rack
  absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::holds_alternative<PlacementRefusal>(*out));
  r.fewest_domains_in_seconds = 501;  // too late: the best it can get now
  out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok() && std::holds_alternative<PlacementDecision>(*out));
  EXPECT_EQ(std::get<PlacementDecision>(*out).domains, 2);
  r.time_limit_seconds = 601;  // 700 + 501 <= 600 + its time limit: wait for one rack after all
  out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::holds_alternative<PlacementRefusal>(*out));
  for (double bad : {-1.0, std::nan(""), static_cast<double>(INFINITY)}) {
    r.fewest_domains_in_seconds = bad;
    EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument) << bad;
    r.fewest_domains_in_seconds = 0;
    r.time_limit_seconds = bad;
    EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument) << bad;
    r.time_limit_seconds.reset();
  }
}

// Random NVL72 and HGX clusters filled with random jobs that end at random times: FewestDomainsIn's answer is
// the first end time after which `required` fits (checked by releasing on a copy), and `preferred` past its wait
// is placed in its fewest domains, or not at all, exactly when the answer is within twice the wait.
TEST(FewestDomainsInTest, RandomClustersAgreeWithReleasingByHand) {
  std::mt19937_64 rng(13);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int later = 0, never = 0, held = 0, spread = 0;
  for (int round = 0; round < 150; ++round) {
    const ReferenceSystem system = pick(0, 1) ? ReferenceSystem::kGb200Nvl72 : ReferenceSystem::kHgxH100;
    v1::ClusterDescription d = BuildSyntheticCluster(
        {"x", {{system, pick(2, 5), system == ReferenceSystem::kGb200Nvl72 ? 18 : pick(2, 4), 0, 8, 0, 0}}, 0});
    d.mutable_policy()->set_preferred_wait_s(600);
    absl::StatusOr<Topology> t = Topology::Build(d);
    ASSERT_TRUE(t.ok()) << t.status();
    Ledger l(*t);
    std::vector<ExpectedEnd> ends;
    for (int i = 0; i < 40; ++i) {
      PlacementRequest job;
      job.id = "r" + std::to_string(i);
      job.gpus = std::vector<int>{1, 2, 4, 8, 12, 16, 24, 36}[pick(0, 7)];
      job.locality = Locality::kNone;
      absl::StatusOr<PlacementOutcome> out = Placer::Place(l, job);
      if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) continue;
      const auto& dec = std::get<PlacementDecision>(*out);
      ASSERT_TRUE(l.Commit({job.id, dec.nodes, dec.per_gpu}).ok());
      ends.push_back({job.id, static_cast<double>(pick(1, 12) * 100)});
    }
    std::sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.in_seconds < b.in_seconds; });
    long long free = 0;
    for (NodeId n = 0; n < static_cast<NodeId>(t->nodes().size()); ++n) free += l.free_gpu_count(n);
    PlacementRequest r = Preferred(std::vector<int>{8, 16, 48, 72, 100, 144}[pick(0, 5)], 600);
    r.gpus_per_node = 0;
    const size_t before = l.allocation_count();
    absl::StatusOr<std::optional<double>> in = FewestDomainsIn(l, r, ends, free);
    ASSERT_TRUE(in.ok()) << in.status();
    ASSERT_EQ(l.allocation_count(), before);
    ASSERT_TRUE(l.CheckInvariants().ok());
    // By hand: release in end order on a copy, and ask for `required` at every distinct end.
    PlacementRequest req = r;
    req.locality = Locality::kRequired;
    Ledger copy = l;
    const auto fits = [&] {
      absl::StatusOr<PlacementOutcome> o = Placer::Place(copy, req);
      return o.ok() && std::holds_alternative<PlacementDecision>(*o);
    };
    std::optional<double> first;
    if (fits()) first = 0;
    for (size_t i = 0; !first && i < ends.size(); ++i) {
      copy.Release(ends[i].id);
      if (i + 1 < ends.size() && ends[i + 1].in_seconds == ends[i].in_seconds) continue;
      if (fits()) first = ends[i].in_seconds;
    }
    ASSERT_EQ(in->has_value(), first.has_value()) << "round " << round;
    if (first) {
      EXPECT_EQ(**in, *first) << "round " << round;
    }
    later += first && *first > 0;
    never += !first;
    // The rule, through Place: within twice the wait the job is `required` (its fewest domains or nothing).
    r.fewest_domains_in_seconds = *in;
    absl::StatusOr<PlacementOutcome> as_preferred = Placer::Place(l, r);
    absl::StatusOr<PlacementOutcome> as_required = Placer::Place(l, req);
    ASSERT_TRUE(as_preferred.ok() && as_required.ok());
    const bool holds = first && 600 + *first <= 1200;
    held += holds;
    if (holds) {
      ASSERT_EQ(as_preferred->index(), as_required->index()) << "round " << round;
      if (const auto* dec = std::get_if<PlacementDecision>(&*as_preferred)) {
        EXPECT_EQ(dec->domains, std::get<PlacementDecision>(*as_required).domains);
      }
    } else if (const auto* dec = std::get_if<PlacementDecision>(&*as_preferred)) {
      spread += dec->domains > dec->min_domains;
    }
  }
  EXPECT_GT(later, 10);  // or the test is blind
  EXPECT_GT(held, 10);
  EXPECT_GT(never + spread, 3);
}

}  // namespace
}  // namespace rackwise
