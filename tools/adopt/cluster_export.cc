// Description -> slurm.conf/gres.conf/topology.conf or a Kubernetes NodeList; see cluster_export.h.
#include "cluster_export.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rackwise/hostlist.h"

namespace rackwise::adopt {
namespace {

const v1::NodeType* FindType(const v1::ClusterDescription& d, const std::string& name) {
  for (const v1::NodeType& t : d.node_types()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// Calls `visit(rack, type, hostlist)` for every node group of every rack (the type + nodes shorthand included).
void ForEachGroup(const v1::ClusterDescription& d,
                  const std::function<void(const v1::Rack&, const v1::NodeType&, const std::string&)>& visit) {
  for (const v1::Rack& rack : d.racks()) {
    if (const v1::NodeType* t = FindType(d, rack.type()); t != nullptr && !rack.nodes().empty()) {
      visit(rack, *t, rack.nodes());
    }
    for (const v1::NodeGroup& g : rack.node_groups()) {
      if (const v1::NodeType* t = FindType(d, g.type())) visit(rack, *t, g.nodes());
    }
  }
}

std::string TopologyTree(const v1::ClusterDescription& d) {
  std::string out = absl::StrCat("# topology/tree for cluster ", d.cluster(), ": a leaf switch per rack\n");
  std::vector<std::pair<std::string, std::vector<std::string>>> units;  // in order of first appearance
  for (const v1::Rack& rack : d.racks()) {
    std::vector<std::string> nodes;
    ForEachGroup(d, [&](const v1::Rack& r, const v1::NodeType&, const std::string& hostlist) {
      if (&r != &rack) return;
      for (std::string& n : ExpandHostlist(hostlist).value_or(std::vector<std::string>())) nodes.push_back(n);
    });
    absl::StrAppend(&out, "SwitchName=", rack.name(), " Nodes=", CompressHostlist(nodes), "\n");
    if (rack.scalable_unit().empty()) continue;
    auto u = std::find_if(units.begin(), units.end(), [&](const auto& x) { return x.first == rack.scalable_unit(); });
    if (u == units.end()) u = units.insert(units.end(), {rack.scalable_unit(), {}});
    u->second.push_back(rack.name());
  }
  for (const auto& [unit, racks] : units) {
    absl::StrAppend(&out, "SwitchName=", unit, " Switches=", absl::StrJoin(racks, ","), "\n");
  }
  return out;
}

}  // namespace

SlurmExport ExportToSlurm(const v1::ClusterDescription& d) {
  SlurmExport out;
  out.slurm_conf = absl::StrCat(
      "# Written by rackwise export from the description of cluster ", d.cluster(), ".\nClusterName=", d.cluster(),
      "\nSelectType=select/rackwise_cons_tres\nGresTypes=gpu\nTopologyPlugin=topology/tree\n");
  out.gres_conf = "AutoDetect=off\n";
  std::vector<std::string> all;
  ForEachGroup(d, [&](const v1::Rack& rack, const v1::NodeType& type, const std::string& hostlist) {
    absl::StrAppend(&out.slurm_conf, "NodeName=", hostlist, " Gres=gpu:", type.name(), ":", type.gpus(), "\n");
    absl::StrAppend(&out.gres_conf, "NodeName=", hostlist, " Name=gpu Type=", type.name(), " File=/dev/nvidia[0-",
                    type.gpus() - 1, "]\n");
    if (type.nvlink() == v1::NVLINK_SCOPE_RACK) {
      absl::StrAppend(&out.topology_block, "BlockName=", rack.name(), "-", type.name(), " Nodes=", hostlist, "\n");
    }
    all.push_back(hostlist);
  });
  absl::StrAppend(&out.slurm_conf, "PartitionName=all Nodes=", absl::StrJoin(all, ","), " Default=YES State=UP\n");
  out.topology_tree = TopologyTree(d);
  return out;
}

std::string ExportToK8sNodes(const v1::ClusterDescription& d, const K8sLabels& labels) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  ForEachGroup(d, [&](const v1::Rack& rack, const v1::NodeType& type, const std::string& hostlist) {
    for (const std::string& name : ExpandHostlist(hostlist).value_or(std::vector<std::string>())) {
      nlohmann::ordered_json node_labels = {{"kubernetes.io/hostname", name},
                                            {kGpuCountLabel, std::to_string(type.gpus())},
                                            {kGpuProductLabel, type.name()}};
      if (type.nvlink() == v1::NVLINK_SCOPE_RACK) {
        node_labels[kGpuCliqueLabel] = absl::StrCat(d.cluster(), "-", rack.name(), "-", type.name(), ".1");
      }
      if (!labels.rack.empty()) node_labels[labels.rack] = rack.name();
      if (!labels.scalable_unit.empty() && !rack.scalable_unit().empty()) {
        node_labels[labels.scalable_unit] = rack.scalable_unit();
      }
      items.push_back({{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", name}, {"labels", node_labels}}},
                       {"status", {{"capacity", {{"nvidia.com/gpu", std::to_string(type.gpus())}}}}}});
    }
  });
  nlohmann::ordered_json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}, {"metadata", {}}};
  return list.dump(2) + "\n";
}

}  // namespace rackwise::adopt
