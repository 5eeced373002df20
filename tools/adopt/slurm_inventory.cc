// slurm.conf + gres.conf + topology.conf -> the GPU nodes; see slurm_inventory.h.
#include "slurm_inventory.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rackwise/hostlist.h"
#include "slurm_config_file.h"

namespace rackwise::adopt {
namespace {

struct GpuGres {
  int count = 0;
  std::string type;
};

// Where one node or line came from, as FILE:LINE.
std::string Origin(const ConfigText& config, const SlurmConfigLine& line) {
  return absl::StrCat(config.file, ":", line.line);
}

class SlurmReader {
 public:
  explicit SlurmReader(Diagnostics* diagnostics) : diagnostics_(diagnostics) {}

  void ReadSlurmConf(const ConfigText& config);
  void ReadGresConf(const ConfigText& config);
  void ReadTopologyConf(const ConfigText& config);
  absl::StatusOr<Inventory> Finish();

 private:
  void Report(const ConfigText& config, int line, std::string message) {
    diagnostics_->push_back({config.file, line, std::move(message)});
  }
  std::optional<std::vector<std::string>> Expand(const ConfigText& config, const SlurmConfigLine& line, const char* key,
                                                 const std::string& hostlist);
  std::optional<GpuGres> ParseGres(const ConfigText& config, const SlurmConfigLine& line, const std::string& gres);
  void AddNodes(const ConfigText& config, const SlurmConfigLine& line, const std::string& gres);
  // The node named `name` in a topology or gres line, or nullptr (with a diagnostic) when slurm.conf lacks it.
  NodeFacts* Known(const ConfigText& config, const SlurmConfigLine& line, const std::string& name);

  Diagnostics* diagnostics_;
  std::string slurm_conf_file_;
  Inventory inventory_;
  std::map<std::string, size_t> index_;               // node name -> inventory_.nodes index (GPU-less nodes too)
  std::map<std::string, GpuGres> gres_conf_;          // node -> what gres.conf says, summed over its lines
  std::map<std::string, Diagnostic> gres_where_;      // node -> the first gres.conf line naming it
  std::map<std::string, std::string> parent_switch_;  // switch -> the switch above it
};

std::optional<std::vector<std::string>> SlurmReader::Expand(const ConfigText& config, const SlurmConfigLine& line,
                                                            const char* key, const std::string& hostlist) {
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist);
  if (!names.ok()) {
    Report(config, line.line, absl::StrCat(key, "=", hostlist, ": ", names.status().message()));
    return std::nullopt;
  }
  return *std::move(names);
}

// Gres=gpu:8, gpu:h100:8, gpu:h100:8(S:0-1), several comma-separated kinds; only gpu counts here.
std::optional<GpuGres> SlurmReader::ParseGres(const ConfigText& config, const SlurmConfigLine& line,
                                              const std::string& gres) {
  GpuGres result;
  for (absl::string_view item : absl::StrSplit(gres, ',', absl::SkipEmpty())) {
    item = item.substr(0, item.find('('));
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    if (absl::AsciiStrToLower(parts[0]) != "gpu") continue;
    std::string type;
    int count = 1;
    if (parts.size() > 3) {
      Report(config, line.line, absl::StrCat("Gres=", gres, ": '", item, "' is not name[:type][:count]"));
      return std::nullopt;
    }
    if (parts.size() == 3) type = std::string(parts[1]);
    absl::string_view last = parts.size() >= 2 ? parts.back() : absl::string_view();
    if (!last.empty()) {
      if (std::optional<int> n = ParseGpuCount(last)) {
        count = *n;
      } else if (parts.size() == 2) {
        type = std::string(last);  // gpu:h100 means one GPU of that type
      } else {
        Report(config, line.line, absl::StrCat("Gres=", gres, ": '", last, "' is not a GPU count"));
        return std::nullopt;
      }
    }
    if (!result.type.empty() && !type.empty() && type != result.type) {
      Report(config, line.line, absl::StrCat("Gres=", gres, ": two GPU types on one node; rackwise takes one"));
      return std::nullopt;
    }
    if (!type.empty()) result.type = type;
    result.count += count;
  }
  return result;
}

void SlurmReader::AddNodes(const ConfigText& config, const SlurmConfigLine& line, const std::string& gres) {
  std::optional<std::vector<std::string>> names = Expand(config, line, "NodeName", *line.Get("nodename"));
  std::optional<GpuGres> gpus = ParseGres(config, line, gres);
  if (!names || !gpus) return;
  for (const std::string& name : *names) {
    if (auto [it, fresh] = index_.try_emplace(name, inventory_.nodes.size()); !fresh) {
      Report(config, line.line,
             absl::StrCat("node '", name, "' is declared again (first at ", inventory_.nodes[it->second].origin, ")"));
      continue;
    }
    inventory_.nodes.push_back(
        {.name = name, .gpus = gpus->count, .gpu_type = gpus->type, .origin = Origin(config, line)});
  }
}

void SlurmReader::ReadSlurmConf(const ConfigText& config) {
  slurm_conf_file_ = config.file;
  std::string default_gres;
  for (const SlurmConfigLine& line : ParseSlurmConfig(config.text, config.file, diagnostics_)) {
    if (line.Kind() == "clustername") inventory_.cluster = line.pairs.front().second;
    if (line.Kind() != "nodename") continue;
    std::optional<std::string> gres = line.Get("gres");
    if (absl::AsciiStrToLower(*line.Get("nodename")) == "default") {
      if (gres) default_gres = *gres;
      continue;
    }
    AddNodes(config, line, gres.value_or(default_gres));
  }
}

NodeFacts* SlurmReader::Known(const ConfigText& config, const SlurmConfigLine& line, const std::string& name) {
  auto it = index_.find(name);
  if (it != index_.end()) return &inventory_.nodes[it->second];
  Report(config, line.line, absl::StrCat("node '", name, "' is not declared in ", slurm_conf_file_));
  return nullptr;
}

// Name=gpu lines: Type= names the GPUs, Count= or File= (a device hostlist) counts them. A line without
// NodeName= applies to every node.
void SlurmReader::ReadGresConf(const ConfigText& config) {
  for (const SlurmConfigLine& line : ParseSlurmConfig(config.text, config.file, diagnostics_)) {
    std::optional<std::string> name = line.Get("name");
    if (!name || absl::AsciiStrToLower(*name) != "gpu") continue;
    GpuGres gres{.count = 1, .type = line.Get("type").value_or("")};
    if (std::optional<std::string> count = line.Get("count")) {
      std::optional<int> n = ParseGpuCount(*count);
      if (!n) {
        Report(config, line.line, absl::StrCat("Count=", *count, " is not a GPU count"));
        continue;
      }
      gres.count = *n;
    } else if (std::optional<std::string> file = line.Get("file")) {
      // /dev/nvidia[0-7]: the brackets are in the device names, not in the directory.
      std::optional<std::vector<std::string>> devices =
          Expand(config, line, "File", file->substr(file->rfind('/') + 1));
      if (!devices) continue;
      gres.count = static_cast<int>(devices->size());
    }
    std::vector<std::string> nodes;
    if (std::optional<std::string> hostlist = line.Get("nodename")) {
      std::optional<std::vector<std::string>> expanded = Expand(config, line, "NodeName", *hostlist);
      if (!expanded) continue;
      nodes = *std::move(expanded);
    } else {
      for (const auto& [node, i] : index_) nodes.push_back(node);
    }
    for (const std::string& node : nodes) {
      if (Known(config, line, node) == nullptr) continue;
      GpuGres& sum = gres_conf_[node];
      sum.count += gres.count;
      if (!gres.type.empty()) sum.type = gres.type;
      gres_where_.try_emplace(node, Diagnostic{config.file, line.line, ""});
    }
  }
}

// SwitchName=S Nodes=H: a leaf switch, the rack; SwitchName=S Switches=H: S is above those switches (their
// scalable unit); BlockName=B Nodes=H: the nodes share one NVLink domain.
void SlurmReader::ReadTopologyConf(const ConfigText& config) {
  for (const SlurmConfigLine& line : ParseSlurmConfig(config.text, config.file, diagnostics_)) {
    std::string kind = line.Kind();
    if (kind != "switchname" && kind != "blockname") continue;
    const std::string& name = line.pairs.front().second;
    if (std::optional<std::string> children = line.Get("switches"); children && kind == "switchname") {
      std::optional<std::vector<std::string>> switches = Expand(config, line, "Switches", *children);
      for (const std::string& s : switches.value_or(std::vector<std::string>())) parent_switch_[s] = name;
    }
    std::optional<std::string> hostlist = line.Get("nodes");
    if (!hostlist) continue;
    std::optional<std::vector<std::string>> nodes = Expand(config, line, "Nodes", *hostlist);
    for (const std::string& node : nodes.value_or(std::vector<std::string>())) {
      NodeFacts* facts = Known(config, line, node);
      if (facts == nullptr) continue;
      std::string& field = kind == "switchname" ? facts->rack : facts->nvlink_domain;
      if (!field.empty() && field != name) {
        Report(config, line.line, absl::StrCat("node '", node, "' is already under ", field));
        continue;
      }
      field = name;
    }
  }
}

// What a topology/block block is: the nodes' NVLink domain only for rack-scale trays (NVL72-class nodes of at most
// 4 GPUs, or a GRES type naming such a system); a block of 8-GPU HGX nodes is a rack (or a scalable unit) whose
// nodes are each a domain of their own. Anything else cannot be told from Slurm's files.
enum class BlockScope { kRackScale, kNodeScale, kUnknown };

bool NamesRackScaleSystem(const std::string& gpu_type) {
  const std::string t = absl::AsciiStrToLower(gpu_type);
  return absl::StrContains(t, "gb200") || absl::StrContains(t, "gb300") || absl::StrContains(t, "nvl");
}

BlockScope ScopeOfBlock(const std::vector<const NodeFacts*>& members) {
  int rack_scale = 0, node_scale = 0;
  for (const NodeFacts* n : members) {
    if (NamesRackScaleSystem(n->gpu_type) || (n->gpus > 0 && n->gpus <= 4 && n->gpu_type.empty())) {
      ++rack_scale;
    } else if (n->gpus >= 8) {
      ++node_scale;  // HGX-class: the NVLink domain is the node's own baseboard
    }
  }
  const int all = static_cast<int>(members.size());
  if (rack_scale == all) return BlockScope::kRackScale;
  if (node_scale == all) return BlockScope::kNodeScale;
  return BlockScope::kUnknown;
}

absl::StatusOr<Inventory> SlurmReader::Finish() {
  std::map<std::string, int> block_sizes;
  for (NodeFacts& node : inventory_.nodes) {
    if (auto it = gres_conf_.find(node.name); it != gres_conf_.end()) {
      if (node.gpus != 0 && node.gpus != it->second.count) {
        Diagnostic d = gres_where_[node.name];
        d.message =
            absl::StrCat(it->second.count, " GPUs for node '", node.name, "', but ", node.origin, " says ", node.gpus);
        diagnostics_->push_back(std::move(d));
      }
      if (node.gpus == 0) node.gpus = it->second.count;
      if (node.gpu_type.empty()) node.gpu_type = it->second.type;
    }
    if (auto it = parent_switch_.find(node.rack); it != parent_switch_.end()) node.scalable_unit = it->second;
    if (!node.nvlink_domain.empty()) ++block_sizes[node.nvlink_domain];
  }
  std::map<std::string, std::vector<const NodeFacts*>> blocks;
  for (const NodeFacts& node : inventory_.nodes) {
    if (node.gpus != 0 && !node.nvlink_domain.empty()) blocks[node.nvlink_domain].push_back(&node);
  }
  std::map<std::string, BlockScope> scopes;
  for (const auto& [name, members] : blocks) scopes[name] = ScopeOfBlock(members);
  Inventory result{.cluster = inventory_.cluster};
  for (NodeFacts& node : inventory_.nodes) {
    if (node.gpus == 0) continue;                                          // login and CPU nodes need not be described
    if (block_sizes[node.nvlink_domain] == 1) node.nvlink_domain.clear();  // a one-node block is just the node
    if (!node.nvlink_domain.empty()) {
      const BlockScope scope = scopes[node.nvlink_domain];
      if (scope == BlockScope::kNodeScale) {
        // An HGX block is a rack of one-node domains: the block names the rack where no switch does.
        if (node.rack.empty()) node.rack = node.nvlink_domain;
        node.nvlink_domain.clear();
      } else if (scope == BlockScope::kUnknown) {
        node.nvlink_scope_guessed = true;
      }
    }
    result.nodes.push_back(std::move(node));
  }
  return result;
}

}  // namespace

absl::StatusOr<Inventory> InventoryFromSlurm(const SlurmConfigs& configs, Diagnostics* diagnostics) {
  size_t before = diagnostics->size();
  SlurmReader reader(diagnostics);
  reader.ReadSlurmConf(configs.slurm_conf);
  for (const ConfigText& gres : configs.gres_confs) reader.ReadGresConf(gres);
  for (const ConfigText& topology : configs.topology_confs) reader.ReadTopologyConf(topology);
  absl::StatusOr<Inventory> inventory = reader.Finish();
  if (inventory.ok() && diagnostics->size() > before) {
    return absl::InvalidArgumentError((*diagnostics)[before].ToString());
  }
  return inventory;
}

}  // namespace rackwise::adopt
