// Cluster sizing: from "N GPUs of system S" to servers, racks, NVLink domains, scalable units, the compute
// fabric, power and cooling, following the structure of the public DGX SuperPOD reference architectures.
//
// The model (every number below is a field of SizingParams, so an operator can change any assumption):
//  - Nodes: ceil(gpus / gpus_per_node); rack-scale systems (GB200 NVL72) are bought by the rack, so their node
//    count rounds up to whole racks. Racks: ceil(nodes / nodes_per_rack).
//  - NVLink domains: one per node (HGX: 8 GPUs behind NVSwitch) or one per rack (NVL72: 72 GPUs).
//  - Scalable units (SU): groups of `su_nodes` nodes (32 HGX nodes = 256 GPUs; 8 NVL72 racks = 144 trays).
//  - Compute fabric: rail-optimised and non-blocking, one port per GPU; rails = GPUs per node (GPU i of every
//    node of an SU goes to rail i). Each leaf switch has radix/2 ports down and radix/2 up. Every SU is cabled
//    as a full SU (as the reference architectures advise), so each rail of each SU gets
//    ceil(su_nodes / (radix/2)) leaves. With at most `radix` leaves, two tiers suffice:
//    spines = ceil(leaf uplinks / radix). Beyond that, three tiers: spines = leaf uplinks / (radix/2) and
//    core = leaf uplinks / radix. A cluster that is one NVLink domain needs no compute fabric at all.
//  - Cables: node-leaf (one per GPU port), leaf-spine (every leaf uplink), spine-core; optics: two
//    transceivers per cable (no copper assumed).
//  - Power: IT = nodes x node_watts + switches x switch_watts; facility = IT x PUE, where PUE defaults to
//    pue_liquid or pue_air by the cooling chosen. Cooling is liquid when the system requires it (NVL72) or when
//    a full rack draws more than air_limit_kw.
//  - The emitted description: one node type, racks with hostlists, caps (full-load draw rounded up to a whole
//    kW unless rack_cap_kw is set), scalable units, one power domain per row (racks_per_row racks, default one
//    SU's racks) capped at row_cap_pct of its racks' caps, under one hall domain capped at hall_cap_pct.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

enum class SizingSystem {
  kH100,        // HGX/DGX H100: 8 GPUs per node, the node is the NVLink domain
  kB200,        // HGX/DGX B200: 8 GPUs per node, the node is the NVLink domain
  kGb200Nvl72,  // GB200 NVL72: 18 trays of 4 GPUs per rack, the rack is the NVLink domain
};

// "h100", "b200", "gb200-nvl72".
absl::StatusOr<SizingSystem> ParseSizingSystem(std::string_view name);
const char* SizingSystemName(SizingSystem system);

struct SizingParams {
  SizingSystem system = SizingSystem::kH100;
  int gpus = 0;  // requested GPUs, >= 1

  // Hardware (defaults: the reference node types of synthetic_cluster.h, vendors' published figures).
  std::string node_type;         // name in the emitted description
  int gpus_per_node = 8;         // also the number of rails
  bool nvlink_rack = false;      // the rack (not the node) is the NVLink domain
  bool whole_racks = false;      // provision whole racks (rack-scale systems)
  double gpu_watts = 700;        // nameplate, informational
  double node_watts = 10200;     // whole node at full load
  double idle_watts = 2500;      // whole node idle
  int gpu_port_gbps = 400;       // compute-fabric port speed per GPU
  bool liquid_required = false;  // the system cannot be air cooled

  // Layout.
  int nodes_per_rack = 4;
  int su_nodes = 32;      // nodes per scalable unit
  int racks_per_row = 0;  // 0: one SU's racks per row

  // Network.
  int switch_radix = 64;       // ports per switch, even, >= 4
  double switch_watts = 1500;  // one switch with its optics at full load

  // Facility.
  double air_limit_kw = 60;  // above this per rack, air cooling is impractical
  double pue_air = 1.5;
  double pue_liquid = 1.2;
  double pue = 0;  // > 0: use this PUE regardless of cooling

  // Caps in the emitted description.
  double rack_cap_kw = 0;     // 0: a full rack's draw, rounded up to a whole kW
  double row_cap_pct = 100;   // row cap as % of the sum of its racks' caps
  double hall_cap_pct = 100;  // hall cap as % of the sum of the row caps
  std::string cluster_name;   // empty: "<system>-<gpus>"
};

// Defaults for one system; set `gpus` (and any override) afterwards.
SizingParams DefaultSizingParams(SizingSystem system);

struct SizingResult {
  int requested_gpus = 0;
  int gpus = 0;  // provisioned (whole nodes, or whole racks)
  int nodes = 0;
  int racks = 0;
  int nvlink_domains = 0;
  int nvlink_domain_gpus = 0;  // size of a full domain
  int scalable_units = 0;
  int rails = 0;
  int leaves_per_rail_per_su = 0;
  int leaf_switches = 0;
  int spine_switches = 0;
  int core_switches = 0;
  int switches = 0;
  int fabric_tiers = 0;  // 0 (no fabric), 2 or 3
  int gpu_ports = 0;
  int cables_node_leaf = 0;
  int cables_leaf_spine = 0;
  int cables_spine_core = 0;
  int cables = 0;
  int optics = 0;  // transceivers
  int rows = 0;
  double rack_kw = 0;  // a full rack at full load
  double rack_idle_kw = 0;
  double rack_cap_kw = 0;  // as emitted
  double compute_kw = 0;   // nodes at full load
  double network_kw = 0;   // switches
  double it_power_kw = 0;
  double pue = 0;
  double facility_power_kw = 0;
  std::string cooling;             // "air" or "liquid"
  std::vector<int> nodes_in_rack;  // per rack, the last one may be partial
};

// Applies the model. InvalidArgument names the parameter that is out of range.
absl::StatusOr<SizingResult> SizeCluster(const SizingParams& params);

// The cluster description of the design (see the model above for what it contains).
v1::ClusterDescription SizingToClusterDescription(const SizingParams& params, const SizingResult& result);

}  // namespace rackwise
