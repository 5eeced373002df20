// Builds synthetic cluster descriptions. See synthetic_cluster.h.
#include "rackwise/synthetic_cluster.h"

#include "absl/strings/str_format.h"

namespace rackwise {

v1::NodeType ReferenceNodeType(ReferenceSystem system) {
  struct Reference {
    const char* name;
    int gpus;
    v1::NvlinkScope nvlink;
    double gpu_watts, node_watts, idle_watts;
  };
  // The published systems (nameplate watts): an 8-GPU HGX node is one NVLink domain, a GB200 tray of 4 GPUs a
  // part of its rack's.
  static constexpr Reference kHgxH100{"hgx-h100", 8, v1::NVLINK_SCOPE_NODE, 700, 10200, 2500};
  static constexpr Reference kHgxB200{"hgx-b200", 8, v1::NVLINK_SCOPE_NODE, 1000, 14300, 3600};
  static constexpr Reference kGb200Tray{"gb200-tray", 4, v1::NVLINK_SCOPE_RACK, 1200, 6600, 1500};
  const Reference& r = system == ReferenceSystem::kHgxH100   ? kHgxH100
                       : system == ReferenceSystem::kHgxB200 ? kHgxB200
                                                             : kGb200Tray;
  v1::NodeType t;
  t.set_name(r.name);
  t.set_gpus(r.gpus);
  t.set_nvlink(r.nvlink);
  t.set_gpu_watts(r.gpu_watts);
  t.set_node_watts(r.node_watts);
  t.set_idle_watts(r.idle_watts);
  return t;
}

v1::ClusterDescription BuildSyntheticCluster(const SyntheticClusterSpec& spec) {
  v1::ClusterDescription d;
  d.set_cluster(spec.name);
  std::vector<ReferenceSystem> types_added;
  bool any_rows = false;
  for (size_t b = 0; b < spec.blocks.size(); ++b) {
    const RackBlock& block = spec.blocks[b];
    const v1::NodeType type = ReferenceNodeType(block.system);
    bool have = false;
    for (ReferenceSystem s : types_added) have |= s == block.system;
    if (!have) {
      *d.add_node_types() = type;
      types_added.push_back(block.system);
    }
    const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
    const double rack_cap = block.rack_cap_kw > 0 ? block.rack_cap_kw : full_kw;
    for (int r = 0; r < block.racks; ++r) {
      v1::Rack* rack = d.add_racks();
      const std::string rack_name = absl::StrFormat("b%d-r%04d", b, r);
      rack->set_name(rack_name);
      rack->set_type(type.name());
      rack->set_nodes(absl::StrFormat("%s-n[01-%02d]", rack_name, block.nodes_per_rack));
      rack->set_power_cap_kw(rack_cap);
      rack->set_scalable_unit(absl::StrFormat("b%d-su%03d", b, r / std::max(1, block.racks_per_su)));
      if (block.racks_per_row > 0) {
        const int row = r / block.racks_per_row;
        const std::string row_name = absl::StrFormat("b%d-row%02d", b, row);
        if (r % block.racks_per_row == 0) {
          v1::PowerDomain* pd = d.add_power_domains();
          pd->set_name(row_name);
          pd->set_power_cap_kw(block.row_cap_kw > 0 ? block.row_cap_kw : block.racks_per_row * rack_cap);
          if (spec.hall_cap_kw > 0) pd->set_parent("hall");
          any_rows = true;
        }
        rack->set_power_domain(row_name);
      }
    }
  }
  if (any_rows && spec.hall_cap_kw > 0) {
    v1::PowerDomain* hall = d.add_power_domains();
    hall->set_name("hall");
    hall->set_power_cap_kw(spec.hall_cap_kw);
  }
  return d;
}

}  // namespace rackwise
