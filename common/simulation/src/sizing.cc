// Cluster sizing model; see rackwise/sizing.h for the assumptions and where they come from.
#include "rackwise/sizing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

int CeilDiv(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Generous upper bound so that a typo cannot make the model allocate millions of racks.
constexpr int kMaxGpus = 1'000'000;

absl::Status CheckParams(const SizingParams& p) {
  auto bad = [](std::string_view field, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", std::string(what)));
  };
  if (p.gpus < 1 || p.gpus > kMaxGpus) return bad("gpus", absl::StrCat("must be 1..", kMaxGpus));
  if (p.gpus_per_node < 1 || p.gpus_per_node > 64) return bad("gpus_per_node", "must be 1..64");
  if (p.nodes_per_rack < 1 || p.nodes_per_rack > 256) return bad("nodes_per_rack", "must be 1..256");
  if (p.su_nodes < 1) return bad("su_nodes", "must be >= 1");
  if (p.racks_per_row < 0) return bad("racks_per_row", "must be >= 0 (0: one scalable unit's racks)");
  if (p.switch_radix < 4 || p.switch_radix % 2 != 0) return bad("switch_radix", "must be even and >= 4");
  if (!(p.node_watts > 0)) return bad("node_watts", "must be > 0");
  if (!(p.idle_watts >= 0) || p.idle_watts > p.node_watts) return bad("idle_watts", "must be 0..node_watts");
  if (!(p.gpu_watts >= 0)) return bad("gpu_watts", "must be >= 0");
  if (!(p.switch_watts >= 0)) return bad("switch_watts", "must be >= 0");
  if (!(p.air_limit_kw > 0)) return bad("air_limit_kw", "must be > 0");
  if (!(p.pue_air >= 1) || !(p.pue_liquid >= 1)) return bad("pue_air/pue_liquid", "must be >= 1");
  if (p.pue != 0 && !(p.pue >= 1)) return bad("pue", "must be >= 1 (or 0: by cooling)");
  if (!(p.rack_cap_kw >= 0)) return bad("rack_cap_kw", "must be >= 0 (0: full load)");
  if (!(p.row_cap_pct > 0 && p.row_cap_pct <= 1000)) return bad("row_cap_pct", "must be in (0, 1000]");
  if (!(p.hall_cap_pct > 0 && p.hall_cap_pct <= 1000)) return bad("hall_cap_pct", "must be in (0, 1000]");
  if (p.node_type.empty()) return bad("node_type", "must not be empty");
  return absl::OkStatus();
}

// What each system is built of: its node (from the one table of reference systems, synthetic_cluster.h), its
// rack, its scalable unit and its compute-fabric port per GPU.
struct SystemFacts {
  SizingSystem system;
  const char* name;
  ReferenceSystem reference;
  int nodes_per_rack;
  int su_nodes;
  int gpu_port_gbps;
  bool rack_scale;  // the rack is the NVLink domain, provisioned whole, liquid cooled
};
constexpr SystemFacts kSystems[] = {
    // DGX H100: 4 per rack (~41 kW, air); SU = 32 nodes; 400 Gb/s NDR ports.
    {SizingSystem::kH100, "h100", ReferenceSystem::kHgxH100, 4, 32, 400, false},
    // DGX B200: 4 per rack (~57 kW); SU = 32 nodes; 800 Gb/s ports.
    {SizingSystem::kB200, "b200", ReferenceSystem::kHgxB200, 4, 32, 800, false},
    // GB200 NVL72: 18 compute trays per rack; SU = 8 racks (576 GPUs); 800 Gb/s ports.
    {SizingSystem::kGb200Nvl72, "gb200-nvl72", ReferenceSystem::kGb200Nvl72, 18, 8 * 18, 800, true},
};

const SystemFacts& FactsOf(SizingSystem system) {
  for (const SystemFacts& facts : kSystems) {
    if (facts.system == system) return facts;
  }
  return kSystems[0];  // unreachable: every SizingSystem has a row
}

}  // namespace

absl::StatusOr<SizingSystem> ParseSizingSystem(std::string_view name) {
  if (name == "gb200") return SizingSystem::kGb200Nvl72;
  for (const SystemFacts& facts : kSystems) {
    if (name == facts.name) return facts.system;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown system '", std::string(name), "' (h100, b200, gb200-nvl72)"));
}

const char* SizingSystemName(SizingSystem system) { return FactsOf(system).name; }

SizingParams DefaultSizingParams(SizingSystem system) {
  const SystemFacts& facts = FactsOf(system);
  SizingParams p;
  p.system = system;
  p.nodes_per_rack = facts.nodes_per_rack;
  p.su_nodes = facts.su_nodes;
  p.gpu_port_gbps = facts.gpu_port_gbps;
  p.nvlink_rack = p.whole_racks = p.liquid_required = facts.rack_scale;
  const v1::NodeType type = ReferenceNodeType(facts.reference);
  p.node_type = type.name();
  p.gpus_per_node = static_cast<int>(type.gpus());
  p.gpu_watts = type.gpu_watts();
  p.node_watts = type.node_watts();
  p.idle_watts = type.idle_watts();
  return p;
}

absl::StatusOr<SizingResult> SizeCluster(const SizingParams& p) {
  if (absl::Status s = CheckParams(p); !s.ok()) return s;
  SizingResult r;
  r.requested_gpus = p.gpus;
  r.nodes = CeilDiv(p.gpus, p.gpus_per_node);
  if (p.whole_racks) r.nodes = CeilDiv(r.nodes, p.nodes_per_rack) * p.nodes_per_rack;
  r.gpus = r.nodes * p.gpus_per_node;
  r.racks = CeilDiv(r.nodes, p.nodes_per_rack);
  for (int i = 0; i < r.racks; ++i)
    r.nodes_in_rack.push_back(std::min(p.nodes_per_rack, r.nodes - i * p.nodes_per_rack));
  if (p.nvlink_rack) {
    r.nvlink_domains = r.racks;
    r.nvlink_domain_gpus = std::min(r.nodes, p.nodes_per_rack) * p.gpus_per_node;
  } else {
    r.nvlink_domains = r.nodes;
    r.nvlink_domain_gpus = p.gpus_per_node;
  }
  r.scalable_units = CeilDiv(r.nodes, p.su_nodes);
  r.rails = p.gpus_per_node;
  r.rows = CeilDiv(r.racks, p.racks_per_row > 0 ? p.racks_per_row : CeilDiv(p.su_nodes, p.nodes_per_rack));

  // Compute fabric. A single NVLink domain talks over NVLink only.
  const int half = p.switch_radix / 2;
  if (r.nvlink_domains > 1) {
    r.gpu_ports = r.gpus;
    r.leaves_per_rail_per_su = CeilDiv(p.su_nodes, half);
    r.leaf_switches = r.scalable_units * r.rails * r.leaves_per_rail_per_su;
    const int64_t uplinks = static_cast<int64_t>(r.leaf_switches) * half;
    if (r.leaf_switches <= p.switch_radix) {
      r.fabric_tiers = 2;
      r.spine_switches = CeilDiv(uplinks, p.switch_radix);
    } else {
      r.fabric_tiers = 3;
      r.spine_switches = CeilDiv(uplinks, half);
      r.core_switches = CeilDiv(uplinks, p.switch_radix);
      r.cables_spine_core = static_cast<int>(static_cast<int64_t>(r.spine_switches) * half);
    }
    r.cables_node_leaf = r.gpu_ports;
    r.cables_leaf_spine = static_cast<int>(uplinks);
  }
  r.switches = r.leaf_switches + r.spine_switches + r.core_switches;
  r.cables = r.cables_node_leaf + r.cables_leaf_spine + r.cables_spine_core;
  r.optics = 2 * r.cables;

  // Power and cooling.
  const int full_rack_nodes = std::min(r.nodes, p.nodes_per_rack);
  r.rack_kw = full_rack_nodes * p.node_watts / 1000.0;
  r.rack_idle_kw = full_rack_nodes * p.idle_watts / 1000.0;
  r.rack_cap_kw = p.rack_cap_kw > 0 ? p.rack_cap_kw : std::ceil(r.rack_kw - 1e-9);
  r.compute_kw = r.nodes * p.node_watts / 1000.0;
  r.network_kw = r.switches * p.switch_watts / 1000.0;
  r.it_power_kw = r.compute_kw + r.network_kw;
  const bool liquid = p.liquid_required || r.rack_kw > p.air_limit_kw;
  r.cooling = liquid ? "liquid" : "air";
  r.pue = p.pue > 0 ? p.pue : (liquid ? p.pue_liquid : p.pue_air);
  r.facility_power_kw = r.it_power_kw * r.pue;
  return r;
}

v1::ClusterDescription SizingToClusterDescription(const SizingParams& p, const SizingResult& r) {
  v1::ClusterDescription d;
  d.set_cluster(p.cluster_name.empty() ? absl::StrCat(SizingSystemName(p.system), "-", r.gpus) : p.cluster_name);
  v1::NodeType* type = d.add_node_types();
  type->set_name(p.node_type);
  type->set_gpus(p.gpus_per_node);
  type->set_nvlink(p.nvlink_rack ? v1::NVLINK_SCOPE_RACK : v1::NVLINK_SCOPE_NODE);
  type->set_gpu_watts(p.gpu_watts);
  type->set_node_watts(p.node_watts);
  type->set_idle_watts(p.idle_watts);

  const int racks_per_row = p.racks_per_row > 0 ? p.racks_per_row : CeilDiv(p.su_nodes, p.nodes_per_rack);
  const int rack_digits = std::max<int>(2, absl::StrCat(r.racks).size());
  const int node_digits = std::max<int>(3, absl::StrCat(r.nodes).size());
  const int su_digits = std::max<int>(2, absl::StrCat(r.scalable_units).size());
  const int row_digits = std::max<int>(2, absl::StrCat(r.rows).size());
  auto num = [](int v, int digits) { return absl::StrFormat("%0*d", digits, v); };

  std::vector<double> row_rack_caps(r.rows, 0.0);
  int first_node = 1;
  for (int i = 0; i < r.racks; ++i) {
    v1::Rack* rack = d.add_racks();
    const std::string rack_name = absl::StrCat("r", num(i + 1, rack_digits));
    rack->set_name(rack_name);
    rack->set_type(p.node_type);
    const int n = r.nodes_in_rack[i];
    if (p.nvlink_rack) {
      // Trays are named after their rack: r01-t[01-18].
      rack->set_nodes(absl::StrCat(rack_name, "-t[", num(1, 2), "-", num(n, 2), "]"));
    } else {
      rack->set_nodes(
          n == 1 ? absl::StrCat("gpu", num(first_node, node_digits))
                 : absl::StrCat("gpu[", num(first_node, node_digits), "-", num(first_node + n - 1, node_digits), "]"));
    }
    const double cap = p.rack_cap_kw > 0 ? p.rack_cap_kw : std::ceil(n * p.node_watts / 1000.0 - 1e-9);
    rack->set_power_cap_kw(cap);
    const int row = i / racks_per_row;
    row_rack_caps[row] += cap;
    rack->set_power_domain(absl::StrCat("row", num(row + 1, row_digits)));
    const int su = (first_node - 1) / p.su_nodes;
    rack->set_scalable_unit(absl::StrCat("su", num(su + 1, su_digits)));
    first_node += n;
  }
  double hall = 0;
  for (int row = 0; row < r.rows; ++row) {
    v1::PowerDomain* pd = d.add_power_domains();
    pd->set_name(absl::StrCat("row", num(row + 1, row_digits)));
    // Caps are kept to 0.1 kW so that the YAML stays readable.
    const double cap = std::floor(row_rack_caps[row] * p.row_cap_pct / 100.0 * 10 + 1e-6) / 10;
    pd->set_power_cap_kw(cap);
    pd->set_parent("hall");
    hall += cap;
  }
  v1::PowerDomain* root = d.add_power_domains();
  root->set_name("hall");
  root->set_power_cap_kw(std::floor(hall * p.hall_cap_pct / 100.0 * 10 + 1e-6) / 10);
  return d;
}

}  // namespace rackwise
