// No way around the power model: extreme and tiny watts and caps (0, denormals, NaN, infinities, 1e300,
// negatives, huge integers as text) fed through validation, the ledger and the placer. Properties: nothing
// overflows (every ledger draw equals an independent sum in 128-bit integers), no cap is passed by an enforced
// commit or a placement, and no job is charged less than its node type's floor (none is free).
// The faces' parsing of the same values is tested beside each face (pod_spec_test.cc, job_options_test.cc).
#include "rackwise/power_bounds.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rackwise/cluster_description.h"
#include "rackwise/ledger.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Every awkward double we can think of, plus ordinary ones so that some cases pass.
std::vector<double> ExtremeValues() {
  return {0,
          std::numeric_limits<double>::denorm_min(),
          1e-310,
          -0.0,
          std::nan(""),
          kInf,
          -kInf,
          1e300,
          -1e300,
          -1,
          0.001,
          0.5,
          1,
          171.5,
          300,
          700,
          9999.5,
          10'000,
          10'000.001,
          1e5,
          1e7,
          1e7 + 1,
          1e17,
          9.2233720368547758e18,
          1.8446744073709552e19,
          std::numeric_limits<double>::max()};
}

// Independent draw of every rack, in 128-bit integers: idle plus each allocation's GPUs at the watts the
// ledger says it charges (declared, at least the type's floor, or the type's default).
std::vector<__int128> IndependentRackDraw(const Ledger& l) {
  const Topology& t = l.topology();
  std::vector<__int128> draw(t.racks().size());
  for (size_t r = 0; r < draw.size(); ++r) {
    for (NodeId n : t.racks()[r].nodes) draw[r] += t.type_of(n).idle;
  }
  for (const Allocation* a : l.Allocations()) {
    for (const NodeGpus& ng : a->nodes) {
      const NodeType& type = t.type_of(ng.node);
      const __int128 per_gpu = a->per_gpu > 0 ? std::max(a->per_gpu, type.min_per_gpu) : type.per_gpu;
      draw[t.nodes()[ng.node].rack] += per_gpu * std::popcount(ng.gpus);
    }
  }
  return draw;
}

void ExpectLedgerSound(const Ledger& l, const std::string& context) {
  ASSERT_TRUE(l.CheckInvariants().ok()) << context << ": " << l.CheckInvariants();
  const Topology& t = l.topology();
  std::vector<__int128> draw = IndependentRackDraw(l);
  for (RackId r = 0; r < static_cast<RackId>(draw.size()); ++r) {
    ASSERT_TRUE(static_cast<__int128>(l.rack_draw(r)) == draw[r])
        << context << ": rack " << t.racks()[r].name << " draws " << l.rack_draw(r) << " mW, independently "
        << static_cast<double>(draw[r]);
    ASSERT_GE(l.rack_cap(r), 0) << context;
    ASSERT_LE(l.rack_cap(r), WattsToMilliwatts(kMaxCapKw * 1000)) << context;
  }
  // (IndependentRackDraw charges a declared draw at least at the type's floor, so the equality above also
  // says that no job, not even one recovered after a restart, is charged less: none is free.)
  for (const Allocation* a : l.Allocations()) ASSERT_LE(a->per_gpu, WattsToMilliwatts(kMaxWattsPerGpu)) << context;
}

// One H100 node type, two racks under a row; `set` changes one field to an extreme value.
v1::ClusterDescription Small() {
  return BuildSyntheticCluster({"b", {{ReferenceSystem::kHgxH100, 2, 4, 35, 2, 2, 60}}, 0});
}

using Mutation = void (*)(v1::ClusterDescription*, double);
struct Field {
  const char* name;
  Mutation set;
};

std::vector<Field> Fields() {
  return {
      {"node_watts", [](v1::ClusterDescription* d, double v) { d->mutable_node_types(0)->set_node_watts(v); }},
      {"idle_watts", [](v1::ClusterDescription* d, double v) { d->mutable_node_types(0)->set_idle_watts(v); }},
      {"gpu_watts", [](v1::ClusterDescription* d, double v) { d->mutable_node_types(0)->set_gpu_watts(v); }},
      {"rack cap", [](v1::ClusterDescription* d, double v) { d->mutable_racks(0)->set_power_cap_kw(v); }},
      {"row cap", [](v1::ClusterDescription* d, double v) { d->mutable_power_domains(0)->set_power_cap_kw(v); }},
      {"policy min", [](v1::ClusterDescription* d, double v) { d->mutable_policy()->set_min_watts_per_gpu(v); }},
      {"policy max", [](v1::ClusterDescription* d, double v) { d->mutable_policy()->set_max_watts_per_gpu(v); }},
  };
}

TEST(PowerBoundsProperty, ValidationAdmitsOnlyDescriptionsWhoseSumsFit) {
  for (const Field& f : Fields()) {
    for (double v : ExtremeValues()) {
      v1::ClusterDescription d = Small();
      f.set(&d, v);
      const std::string context = absl::StrCat(f.name, "=", v);
      Diagnostics diags;
      const bool valid = ValidateClusterDescription(d, "mem", &diags);
      absl::StatusOr<Topology> t = Topology::Build(d);
      if (!valid) continue;  // refused with a diagnostic: fine, whatever Build says
      ASSERT_TRUE(t.ok()) << context << ": valid but not buildable: " << t.status();
      for (const NodeType& nt : t->node_types()) {
        EXPECT_GE(nt.per_gpu, 0) << context;
        EXPECT_LE(nt.idle, WattsToMilliwatts(kMaxNodeWatts)) << context;
        EXPECT_GE(nt.min_per_gpu, WattsToMilliwatts(kMinWattsPerGpu)) << context;
        EXPECT_LE(nt.max_per_gpu, WattsToMilliwatts(kMaxWattsPerGpu)) << context;
      }
      for (const Rack& r : t->racks()) EXPECT_LE(r.cap, WattsToMilliwatts(kMaxCapKw * 1000)) << context;
      // Fill the cluster in recovery mode (caps ignored): the largest draws the description allows.
      Ledger l(*t);
      for (NodeId n = 0; n < static_cast<NodeId>(t->nodes().size()); ++n) {
        ASSERT_TRUE(l.Commit({absl::StrCat("j", n),
                              {{n, (GpuMask{1} << t->nodes()[n].gpus) - 1}},
                              WattsToMilliwatts(kMaxWattsPerGpu)},
                             CommitMode::kRecover)
                        .ok())
            << context;
      }
      ExpectLedgerSound(l, context);
    }
  }
}

TEST(PowerBoundsProperty, TheReportedOverflowIsRefused) {
  v1::ClusterDescription d = Small();
  d.mutable_node_types(0)->set_node_watts(1e17);
  Diagnostics diags;
  EXPECT_FALSE(ValidateClusterDescription(d, "mem", &diags));
  ASSERT_FALSE(diags.empty());
  EXPECT_NE(diags[0].message.find("node_watts must be at most 100000 W"), std::string::npos) << diags[0].message;
  EXPECT_EQ(Topology::Build(d).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PowerBoundsProperty, LedgerRefusesOutOfBoundWattsAndClampsCaps) {
  absl::StatusOr<Topology> t = Topology::Build(Small());
  ASSERT_TRUE(t.ok()) << t.status();
  const NodeType& h100 = t->node_types()[0];
  std::mt19937_64 rng(7);
  const std::vector<double> values = ExtremeValues();
  for (int round = 0; round < 400; ++round) {
    Ledger l(*t);
    for (int step = 0; step < 30; ++step) {
      const double v = values[rng() % values.size()];
      const std::string context = absl::StrCat("round ", round, " step ", step, " value ", v);
      switch (rng() % 4) {
        case 0: l.SetRackCap(static_cast<RackId>(rng() % t->racks().size()), WattsToMilliwatts(v * 1e6)); break;
        case 1:
          l.SetPowerDomainCap(static_cast<PowerDomainId>(rng() % t->power_domains().size()), WattsToMilliwatts(v));
          break;
        default: {
          const NodeId n = static_cast<NodeId>(rng() % t->nodes().size());
          const Allocation a{
              absl::StrCat("a", round, "-", step), {{n, GpuMask{1} << (rng() % 8)}}, WattsToMilliwatts(v)};
          const bool recover = rng() % 4 == 0;
          const absl::Status s = l.Commit(a, recover ? CommitMode::kRecover : CommitMode::kEnforce);
          if (!s.ok()) break;
          ASSERT_LE(a.per_gpu, WattsToMilliwatts(kMaxWattsPerGpu)) << context;
          if (!recover) {
            ASSERT_TRUE(a.per_gpu == 0 || a.per_gpu >= h100.min_per_gpu) << context << ": a job declared itself free";
            const RackId rack = t->nodes()[n].rack;
            ASSERT_LE(l.rack_draw(rack), l.rack_cap(rack)) << context << ": an enforced commit passed a cap";
            for (PowerDomainId p : t->racks()[rack].power_chain)
              ASSERT_LE(l.power_domain_draw(p), l.power_domain_cap(p)) << context;
          }
        }
      }
      ExpectLedgerSound(l, context);
    }
  }
}

TEST(PowerBoundsProperty, RequestsOutsideTheBoundsAreRefusedAndPlacementsKeepCaps) {
  absl::StatusOr<Topology> t = Topology::Build(Small());
  ASSERT_TRUE(t.ok()) << t.status();
  const Milliwatts floor = t->node_types()[0].min_per_gpu;
  Ledger l(*t);
  int serial = 0;
  for (double v : ExtremeValues()) {
    for (int gpus : {1, 8, 16}) {
      PlacementRequest r;
      r.id = absl::StrCat("r", serial++);
      r.gpus = gpus;
      r.watts_per_gpu = v;
      absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
      const bool declared_ok = v == 0 || (std::isfinite(v) && v >= MilliwattsToWatts(floor) && v <= kMaxWattsPerGpu);
      ASSERT_EQ(out.ok(), declared_ok) << "watts " << v << ": " << out.status();
      if (!out.ok()) {
        EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << v;
        continue;
      }
      const auto* d = std::get_if<PlacementDecision>(&*out);
      if (d == nullptr) continue;
      ASSERT_TRUE(l.Commit(d->ToAllocation(r.id)).ok()) << v;
      for (RackId rack = 0; rack < static_cast<RackId>(t->racks().size()); ++rack)
        ASSERT_LE(l.rack_draw(rack), l.rack_cap(rack)) << v;
      ExpectLedgerSound(l, absl::StrCat("request watts ", v));
    }
  }
}

TEST(PowerBoundsProperty, AFreeJobIsRefusedWithTheFloorNamed) {
  absl::StatusOr<Topology> t = Topology::Build(Small());
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  PlacementRequest r;
  r.id = "free";
  r.gpus = 8;
  r.watts_per_gpu = 0.001;
  absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  r.watts_per_gpu = 150;  // above 1 W, below the H100's idle share: 2500 W * 700 / 10200 = 171.6 W
  out = Placer::Place(l, r);
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("hgx-h100 171.569"), std::string::npos) << out.status();
  r.watts_per_gpu = 172;
  EXPECT_TRUE(Placer::Place(l, r).ok());
}

TEST(PowerBoundsProperty, ThePolicyRaisesTheFloorButNeverLowersIt) {
  v1::ClusterDescription d = Small();
  d.mutable_policy()->set_min_watts_per_gpu(10);
  absl::StatusOr<Topology> low = Topology::Build(d);
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(low->node_types()[0].min_per_gpu, WattsToMilliwatts(2500.0 * 700 / 10200));
  d.mutable_policy()->set_min_watts_per_gpu(400);
  absl::StatusOr<Topology> high = Topology::Build(d);
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->node_types()[0].min_per_gpu, 400'000);
}

TEST(PowerBoundsProperty, IdleShareStaysBetweenOneWattAndTheDefault) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> watts(1, kMaxNodeWatts);
  for (int i = 0; i < 10'000; ++i) {
    const int gpus = 1 + static_cast<int>(rng() % kMaxGpusPerNode);
    const double node = std::max(watts(rng), gpus * kMinWattsPerGpu + 1);
    const double idle = std::uniform_real_distribution<double>(0.001, node - gpus * kMinWattsPerGpu)(rng);
    const double gpu = rng() % 2 ? 0 : watts(rng) / 10;
    const double share = IdleShareWattsPerGpu(gpus, idle, node, gpu);
    ASSERT_GE(share, kMinWattsPerGpu);
    ASSERT_LE(share, std::max(kMinWattsPerGpu, (node - idle) / gpus) + 1e-9) << gpus << " " << idle << " " << node;
  }
}

TEST(PowerBounds, ParsesOnlySaneWattsFromText) {
  for (const char* good : {"700", " 450.5 ", "1", "10000"}) EXPECT_TRUE(ParseWattsPerGpu(good).ok()) << good;
  for (const char* bad : {"",
                          "0",
                          "0.0",
                          "0.001",
                          "4.9e-324",
                          "1e-310",
                          "nan",
                          "NaN",
                          "inf",
                          "-inf",
                          "1e300",
                          "-5",
                          "9223372036854775807",
                          "18446744073709551616",
                          "99999999999999999999999999",
                          "1e999",
                          "10000.001",
                          "0x10",
                          "1,000",
                          "700W",
                          "+700"}) {
    EXPECT_FALSE(ParseWattsPerGpu(bad).ok()) << bad;
  }
  EXPECT_TRUE(CheckWattsPerGpu(0).ok());
  EXPECT_FALSE(CheckWattsPerGpu(std::nan("")).ok());
  EXPECT_TRUE(CheckCapKw(0).ok());
  EXPECT_FALSE(CheckCapKw(-kInf).ok());
  EXPECT_FALSE(CheckCapKw(kMaxCapKw * 1.0000001).ok());
}

}  // namespace
}  // namespace rackwise
