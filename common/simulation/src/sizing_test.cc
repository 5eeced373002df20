// Tests for the sizing model: hand-checked design points (against the public DGX SuperPOD tables), monotonicity
// over 8..4,096 GPUs for the three systems, and emitted descriptions that validate and compile.
#include "rackwise/sizing.h"

#include <gtest/gtest.h>

#include "rackwise/cluster_description.h"
#include "rackwise/hostlist.h"
#include "rackwise/topology.h"

namespace rackwise {
namespace {

SizingResult Size(SizingSystem system, int gpus) {
  SizingParams p = DefaultSizingParams(system);
  p.gpus = gpus;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SizingResult{};
}

TEST(SizingTest, OneH100ScalableUnit) {
  SizingResult r = Size(SizingSystem::kH100, 256);
  EXPECT_EQ(r.gpus, 256);
  EXPECT_EQ(r.nodes, 32);
  EXPECT_EQ(r.racks, 8);
  EXPECT_EQ(r.nvlink_domains, 32);
  EXPECT_EQ(r.scalable_units, 1);
  EXPECT_EQ(r.rails, 8);
  EXPECT_EQ(r.leaves_per_rail_per_su, 1);
  EXPECT_EQ(r.leaf_switches, 8);
  EXPECT_EQ(r.spine_switches, 4);  // 8 leaves x 32 uplinks / 64 ports
  EXPECT_EQ(r.core_switches, 0);
  EXPECT_EQ(r.switches, 12);
  EXPECT_EQ(r.fabric_tiers, 2);
  EXPECT_EQ(r.gpu_ports, 256);
  EXPECT_EQ(r.cables, 512);
  EXPECT_EQ(r.optics, 1024);
  EXPECT_DOUBLE_EQ(r.rack_kw, 40.8);
  EXPECT_DOUBLE_EQ(r.rack_cap_kw, 41);
  EXPECT_DOUBLE_EQ(r.compute_kw, 326.4);
  EXPECT_DOUBLE_EQ(r.it_power_kw, 326.4 + 12 * 1.5);
  EXPECT_EQ(r.cooling, "air");
  EXPECT_DOUBLE_EQ(r.facility_power_kw, (326.4 + 18) * 1.5);
}

// The DGX SuperPOD reference architecture's switch counts: 2 SU 16/8, 4 SU 32/16, 8 SU 64/32,
// 16 SU 128 leaf / 128 spine / 64 core.
TEST(SizingTest, MatchesReferenceSwitchCounts) {
  struct Point {
    int gpus, leaf, spine, core;
  };
  for (Point pt : {Point{512, 16, 8, 0}, Point{1024, 32, 16, 0}, Point{2048, 64, 32, 0}, Point{4096, 128, 128, 64}}) {
    SizingResult r = Size(SizingSystem::kH100, pt.gpus);
    EXPECT_EQ(r.leaf_switches, pt.leaf) << pt.gpus;
    EXPECT_EQ(r.spine_switches, pt.spine) << pt.gpus;
    EXPECT_EQ(r.core_switches, pt.core) << pt.gpus;
    EXPECT_EQ(r.fabric_tiers, pt.core ? 3 : 2) << pt.gpus;
  }
}

TEST(SizingTest, SingleDomainNeedsNoFabric) {
  SizingResult h = Size(SizingSystem::kH100, 8);
  EXPECT_EQ(h.nodes, 1);
  EXPECT_EQ(h.switches, 0);
  EXPECT_EQ(h.fabric_tiers, 0);
  EXPECT_DOUBLE_EQ(h.it_power_kw, 10.2);
  SizingResult g = Size(SizingSystem::kGb200Nvl72, 8);  // bought by the rack
  EXPECT_EQ(g.gpus, 72);
  EXPECT_EQ(g.nodes, 18);
  EXPECT_EQ(g.racks, 1);
  EXPECT_EQ(g.nvlink_domains, 1);
  EXPECT_EQ(g.nvlink_domain_gpus, 72);
  EXPECT_EQ(g.switches, 0);
  EXPECT_EQ(g.cooling, "liquid");
}

TEST(SizingTest, Gb200ScalableUnits) {
  SizingResult r = Size(SizingSystem::kGb200Nvl72, 4608);
  EXPECT_EQ(r.racks, 64);
  EXPECT_EQ(r.nodes, 64 * 18);
  EXPECT_EQ(r.nvlink_domains, 64);
  EXPECT_EQ(r.scalable_units, 8);
  EXPECT_EQ(r.rails, 4);
  EXPECT_EQ(r.leaves_per_rail_per_su, 5);  // 144 trays per rail / 32 ports down
  EXPECT_EQ(r.leaf_switches, 8 * 4 * 5);
  EXPECT_DOUBLE_EQ(r.rack_kw, 118.8);
  EXPECT_EQ(r.cooling, "liquid");
  EXPECT_DOUBLE_EQ(r.pue, 1.2);
}

TEST(SizingTest, DenseRacksTurnLiquid) {
  SizingParams p = DefaultSizingParams(SizingSystem::kB200);
  p.gpus = 512;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cooling, "air");  // 4 x 14.3 kW = 57.2 kW
  p.nodes_per_rack = 8;
  r = SizeCluster(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cooling, "liquid");
  EXPECT_EQ(r->racks, 8);
  p.pue = 1.05;
  r = SizeCluster(p);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->facility_power_kw, r->it_power_kw * 1.05);
}

TEST(SizingTest, MonotoneInGpus) {
  for (SizingSystem s : {SizingSystem::kH100, SizingSystem::kB200, SizingSystem::kGb200Nvl72}) {
    SizingResult prev;
    for (int g = 8; g <= 4096; g += 8) {
      SizingResult r = Size(s, g);
      EXPECT_GE(r.gpus, g);
      EXPECT_LT(r.gpus - g, s == SizingSystem::kGb200Nvl72 ? 72 : 8);
      EXPECT_GE(r.nodes, prev.nodes) << g;
      EXPECT_GE(r.racks, prev.racks) << g;
      EXPECT_GE(r.nvlink_domains, prev.nvlink_domains) << g;
      EXPECT_GE(r.scalable_units, prev.scalable_units) << g;
      EXPECT_GE(r.leaf_switches, prev.leaf_switches) << g;
      EXPECT_GE(r.switches, prev.switches) << g;
      EXPECT_GE(r.optics, prev.optics) << g;
      EXPECT_GE(r.it_power_kw, prev.it_power_kw) << g;
      EXPECT_GE(r.facility_power_kw, r.it_power_kw);
      // Non-blocking: every leaf has as many ports up as down, and nothing is over its radix.
      if (r.fabric_tiers > 0) {
        EXPECT_LE(r.gpu_ports, r.leaf_switches * 32) << g;
        EXPECT_GE(r.spine_switches * 64, r.leaf_switches * 32) << g;
      }
      prev = r;
    }
  }
}

TEST(SizingTest, RejectsBadParameters) {
  SizingParams p = DefaultSizingParams(SizingSystem::kH100);
  p.gpus = 0;
  EXPECT_FALSE(SizeCluster(p).ok());
  p.gpus = 64;
  p.switch_radix = 63;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("switch_radix"), std::string::npos);
  p.switch_radix = 64;
  p.idle_watts = p.node_watts + 1;
  EXPECT_FALSE(SizeCluster(p).ok());
}

TEST(SizingTest, EmittedDescriptionValidatesAndCompiles) {
  for (SizingSystem s : {SizingSystem::kH100, SizingSystem::kB200, SizingSystem::kGb200Nvl72}) {
    for (int g : {8, 24, 256, 1000, 4096}) {
      SizingParams p = DefaultSizingParams(s);
      p.gpus = g;
      absl::StatusOr<SizingResult> r = SizeCluster(p);
      ASSERT_TRUE(r.ok());
      v1::ClusterDescription d = SizingToClusterDescription(p, *r);
      Diagnostics diags;
      EXPECT_TRUE(ValidateClusterDescription(d, "sized", &diags))
          << SizingSystemName(s) << " " << g << ": " << (diags.empty() ? "" : diags[0].ToString());
      ASSERT_EQ(d.racks_size(), r->racks);
      int nodes = 0;
      for (const v1::Rack& rack : d.racks()) {
        absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(rack.nodes());
        ASSERT_TRUE(names.ok()) << rack.nodes();
        nodes += names->size();
      }
      EXPECT_EQ(nodes, r->nodes);
      absl::StatusOr<Topology> t = Topology::Build(d);
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(t->total_gpus(), r->gpus);
      EXPECT_EQ(static_cast<int>(t->domains().size()), r->nvlink_domains);
      EXPECT_EQ(static_cast<int>(t->scalable_units().size()), r->scalable_units);
      // Round trip through YAML.
      Diagnostics diags2;
      absl::StatusOr<v1::ClusterDescription> back =
          ParseClusterDescription(ClusterDescriptionToYaml(d), "sized.yaml", &diags2);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(back->racks_size(), d.racks_size());
    }
  }
}

TEST(SizingTest, RowCapsScale) {
  SizingParams p = DefaultSizingParams(SizingSystem::kH100);
  p.gpus = 512;
  p.row_cap_pct = 75;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  ASSERT_TRUE(r.ok());
  v1::ClusterDescription d = SizingToClusterDescription(p, *r);
  ASSERT_EQ(r->rows, 2);
  ASSERT_EQ(d.power_domains_size(), 3);
  EXPECT_DOUBLE_EQ(d.power_domains(0).power_cap_kw(), 8 * 41 * 0.75);
  EXPECT_EQ(d.power_domains(2).name(), "hall");
  EXPECT_DOUBLE_EQ(d.power_domains(2).power_cap_kw(), 2 * 8 * 41 * 0.75);
}

}  // namespace
}  // namespace rackwise
