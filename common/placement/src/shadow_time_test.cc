// Shadow times and the `preferred` hold-out rule (rackwise/shadow_time.h): hand-checked cases, the rule against an
// independent statement of it (when does the job finish, waiting or spread), and a property over random
// clusters: FewestDomainsIn names the first expected end at which the job fits its fewest domains, leaves the
// ledger as it was, and Place keeps a `preferred` job to those domains exactly while the rule says.
#include "rackwise/shadow_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// A spread start costs a quarter of the time limit (dyadic: the boundaries below are exact).
absl::StatusOr<Topology> Nvl72(int racks) {
  v1::ClusterDescription d = BuildSyntheticCluster({"x", {{ReferenceSystem::kGb200Nvl72, racks, 18, 0, 8, 0, 0}}, 0});
  d.mutable_policy()->set_spread_cost_fraction(0.25);
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

TEST(PreferredHoldsOutTest, WaitsOnlyWhileTheExpectedWaitIsShorterThanWhatSpreadingCosts) {
  PlacementPolicy p;  // the defaults: spreading costs kDefaultSpreadCostFraction of the limit, no bound
  const double cost = kDefaultSpreadCostFraction * 3600;
  EXPECT_TRUE(PreferredHoldsOut(p, 0, 0.0, 3600.0));
  EXPECT_TRUE(PreferredHoldsOut(p, 1e6, cost - 1, 3600.0));     // sunk waiting does not count
  EXPECT_FALSE(PreferredHoldsOut(p, 0, cost, 3600.0));          // as dear as spreading: start now
  EXPECT_FALSE(PreferredHoldsOut(p, 0, std::nullopt, 3600.0));  // not expected at all
  EXPECT_FALSE(PreferredHoldsOut(p, 0, 0.0, std::nullopt));     // no limit: the cost is not known
  p.preferred_wait_seconds = 600;                               // the bound
  EXPECT_TRUE(PreferredHoldsOut(p, 100, 500.0, 3600.0));
  EXPECT_FALSE(PreferredHoldsOut(p, 100, 501.0, 3600.0));  // would end past the bound: spread now
  EXPECT_FALSE(PreferredHoldsOut(p, 600, 0.0, 3600.0));
  EXPECT_TRUE(PreferredHoldsOut(p, 599, std::nullopt, std::nullopt));  // not known: the bound alone decides
  EXPECT_FALSE(PreferredHoldsOut(p, 600, std::nullopt, std::nullopt));
  p.preferred_wait_seconds = 0;  // never wait
  EXPECT_FALSE(PreferredHoldsOut(p, 0, 0.0, 3600.0));
  p.preferred_wait_seconds.reset();
  p.spread_cost_fraction = 0;  // spreading costs nothing: never wait
  EXPECT_FALSE(PreferredHoldsOut(p, 0, 0.0, 3600.0));
  EXPECT_FALSE(PreferredWantsEstimate(p, Locality::kPreferred, 0));
  p.spread_cost_fraction = 0.5;
  EXPECT_TRUE(PreferredWantsEstimate(p, Locality::kPreferred, 0));
  EXPECT_FALSE(PreferredWantsEstimate(p, Locality::kRequired, 0));
  p.preferred_wait_seconds = 60;
  EXPECT_FALSE(PreferredWantsEstimate(p, Locality::kPreferred, 60));
}

// The rule stated independently, as a comparison of finishing times: waiting finishes `in + T` from now, a spread
// start `T * (1 + f)` from now; the job waits if that is sooner, and if the wait also ends by the bound. With no
// estimate or no limit there is nothing to compare, and only the bound can keep it waiting.
bool FinishesSoonerWaiting(const PlacementPolicy& p, double waited, std::optional<double> in,
                           std::optional<double> limit) {
  if (p.spread_cost_fraction == 0) return false;
  const double bound_expires = p.preferred_wait_seconds.value_or(INFINITY) - waited;  // from now
  if (bound_expires <= 0) return false;
  if (!in || !limit) return p.preferred_wait_seconds.has_value();
  const double finish_waiting = *in + *limit;
  const double finish_spread = *limit * (1 + p.spread_cost_fraction);
  return finish_waiting < finish_spread && *in <= bound_expires;
}

TEST(PreferredHoldsOutTest, AgreesWithComparingFinishingTimes) {
  std::mt19937_64 rng(31);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int held = 0, spread = 0;
  for (int i = 0; i < 200000; ++i) {
    PlacementPolicy p;
    // Dyadic fractions and whole seconds: both statements compute exactly, so boundaries are compared too.
    p.spread_cost_fraction = std::vector<double>{0, 0.125, 0.25, 0.5, 1}[pick(0, 4)];
    if (pick(0, 2) > 0) p.preferred_wait_seconds = pick(0, 4) * 300;
    const double waited = pick(0, 2000);
    const std::optional<double> in = pick(0, 5) ? std::optional<double>(pick(0, 3000)) : std::nullopt;
    const std::optional<double> limit = pick(0, 5) ? std::optional<double>(pick(1, 8) * 600) : std::nullopt;
    const bool holds = PreferredHoldsOut(p, waited, in, limit);
    ASSERT_EQ(holds, FinishesSoonerWaiting(p, waited, in, limit))
        << "f " << p.spread_cost_fraction << " bound " << p.preferred_wait_seconds.value_or(-1) << " waited " << waited
        << " in " << in.value_or(-1) << " limit " << limit.value_or(-1);
    // A face asked for no estimate only where none could hold the job.
    if (!PreferredWantsEstimate(p, Locality::kPreferred, waited)) {
      ASSERT_FALSE(holds);
    }
    (holds ? held : spread)++;
  }
  EXPECT_GT(held, 20000);  // or the property is blind
  EXPECT_GT(spread, 20000);
}

TEST(FewestDomainsInTest, TheFirstEndThatFreesTheFewestDomainsAndTheLedgerIsRestored) {
  // Two NVL72 racks, 40 GPUs busy in each: 48 GPUs fit two racks now, one rack once `b` ends at 500.
  absl::StatusOr<Topology> t = Nvl72(2);
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
  absl::StatusOr<Topology> t = Nvl72(2);
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  ASSERT_TRUE(l.Commit(Busy(*t, "a", 0, 40)).ok());
  ASSERT_TRUE(l.Commit(Busy(*t, "b", 1, 40)).ok());
  PlacementRequest r = Preferred(48, 700);
  r.time_limit_seconds = 2400;  // spreading costs it a quarter of this: 600 s
  r.fewest_domains_in_seconds = 500;
  absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::holds_alternative<PlacementRefusal>(*out));
  r.fewest_domains_in_seconds = 600;  // as dear as spreading: the best it can get now
  out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok() && std::holds_alternative<PlacementDecision>(*out));
  EXPECT_EQ(std::get<PlacementDecision>(*out).domains, 2);
  r.time_limit_seconds = 2404;  // a longer job loses more spread: wait for one rack after all
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
// the first end time after which `required` fits (checked by releasing on a copy), and `preferred` is placed in
// its fewest domains, or not at all, exactly when the answer is sooner than what spreading would cost it.
TEST(FewestDomainsInTest, RandomClustersAgreeWithReleasingByHand) {
  std::mt19937_64 rng(13);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int later = 0, never = 0, held = 0, spread = 0;
  for (int round = 0; round < 150; ++round) {
    const ReferenceSystem system = pick(0, 1) ? ReferenceSystem::kGb200Nvl72 : ReferenceSystem::kHgxH100;
    v1::ClusterDescription d = BuildSyntheticCluster(
        {"x", {{system, pick(2, 5), system == ReferenceSystem::kGb200Nvl72 ? 18 : pick(2, 4), 0, 8, 0, 0}}, 0});
    d.mutable_policy()->set_spread_cost_fraction(0.25);
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
    r.time_limit_seconds = pick(1, 12) * 500;
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
    // The rule, through Place: while waiting is cheaper than spreading the job is `required` (its fewest domains
    // or nothing).
    r.fewest_domains_in_seconds = *in;
    absl::StatusOr<PlacementOutcome> as_preferred = Placer::Place(l, r);
    absl::StatusOr<PlacementOutcome> as_required = Placer::Place(l, req);
    ASSERT_TRUE(as_preferred.ok() && as_required.ok());
    const bool holds = first && *first < 0.25 * *r.time_limit_seconds;
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
