// SPDX-License-Identifier: GPL-2.0-or-later
// Compiling rackwise.yaml for the select plugin and checking it against slurm.conf's nodes.
#include "cluster_model.h"

#include <charconv>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rackwise/cluster_description.h"

namespace rackwise::slurm {
namespace {

constexpr size_t kMaxListedProblems = 8;

// Every diagnostic ("FILE:LINE: message"), joined, at most kMaxListedProblems of them.
absl::Status DescribeFailure(const std::string& file, const absl::Status& status, const Diagnostics& diagnostics) {
  std::vector<std::string> lines;
  for (const Diagnostic& d : diagnostics) {
    if (lines.size() == kMaxListedProblems) {
      lines.push_back(absl::StrCat("and ", diagnostics.size() - kMaxListedProblems, " more"));
      break;
    }
    lines.push_back(d.ToString());
  }
  if (lines.empty()) lines.push_back(absl::StrCat(file, ": ", status.message()));
  return absl::InvalidArgumentError(absl::StrJoin(lines, "; "));
}

}  // namespace

int GpusInGresString(std::string_view gres) {
  int total = 0;
  while (!gres.empty()) {
    const size_t comma = gres.find(',');
    std::string_view entry = gres.substr(0, comma);
    gres = comma == std::string_view::npos ? std::string_view() : gres.substr(comma + 1);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (size_t paren = entry.find('('); paren != std::string_view::npos) entry = entry.substr(0, paren);
    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
      const size_t colon = entry.find(':', start);
      parts.push_back(entry.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    if (parts[0] != "gpu") continue;
    if (parts.size() == 1) {
      total += 1;
      continue;
    }
    std::string_view count = parts.back();
    uint64_t multiplier = 1;
    if (!count.empty() && (count.back() == 'k' || count.back() == 'K')) {
      multiplier = 1024;
      count.remove_suffix(1);
    }
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (!count.empty() && ec == std::errc() && ptr == count.data() + count.size()) {
      if (n > (1u << 20) || n * multiplier > (1u << 20)) return -1;
      total += static_cast<int>(n * multiplier);
    } else if (parts.size() == 2) {
      total += 1;  // "gpu:h100": a type, count 1
    } else {
      return -1;
    }
  }
  return total;
}

ClusterModel::ClusterModel(Topology topology, std::string file)
    : file_(std::move(file)), topology_(std::move(topology)), ledger_(topology_), static_ledger_(topology_) {}

NodeId ClusterModel::ToNode(int slurm_index) const {
  if (slurm_index < 0 || slurm_index >= static_cast<int>(slurm_to_node_.size())) return kNoId;
  return slurm_to_node_[slurm_index];
}

int ClusterModel::ToSlurm(NodeId node) const {
  if (node < 0 || node >= static_cast<int>(node_to_slurm_.size())) return -1;
  return node_to_slurm_[node];
}

absl::StatusOr<std::unique_ptr<ClusterModel>> ClusterModel::Load(const std::string& path,
                                                                 const std::vector<SlurmNode>& slurm_nodes) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(path, &diagnostics);
  if (!description.ok()) return DescribeFailure(path, description.status(), diagnostics);
  return Build(*description, path, slurm_nodes);
}

absl::StatusOr<std::unique_ptr<ClusterModel>> ClusterModel::FromYaml(std::string_view yaml, const std::string& file,
                                                                     const std::vector<SlurmNode>& slurm_nodes) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = ParseClusterDescription(yaml, file, &diagnostics);
  if (!description.ok()) return DescribeFailure(file, description.status(), diagnostics);
  return Build(*description, file, slurm_nodes);
}

absl::StatusOr<std::unique_ptr<ClusterModel>> ClusterModel::Build(const v1::ClusterDescription& description,
                                                                  std::string file,
                                                                  const std::vector<SlurmNode>& slurm_nodes) {
  absl::StatusOr<Topology> topology = Topology::Build(description);
  if (!topology.ok()) return absl::InvalidArgumentError(absl::StrCat(file, ": ", topology.status().message()));

  std::vector<std::string> problems;
  auto problem = [&problems](std::string text) { problems.push_back(std::move(text)); };

  absl::flat_hash_map<std::string, int> slurm_index;
  for (int i = 0; i < static_cast<int>(slurm_nodes.size()); ++i) {
    if (!slurm_nodes[i].name.empty()) slurm_index.emplace(slurm_nodes[i].name, i);
  }
  std::vector<int> node_to_slurm(topology->nodes().size(), -1);
  std::vector<NodeId> slurm_to_node(slurm_nodes.size(), kNoId);
  for (NodeId n = 0; n < static_cast<NodeId>(topology->nodes().size()); ++n) {
    const Node& node = topology->nodes()[n];
    auto it = slurm_index.find(node.name);
    if (it == slurm_index.end()) {
      problem(absl::StrCat("node ", node.name, " (rack ", topology->racks()[node.rack].name,
                           ") is not defined in slurm.conf"));
      continue;
    }
    const SlurmNode& s = slurm_nodes[it->second];
    if (s.gpus != node.gpus) {
      problem(absl::StrCat("node ", node.name, ": slurm.conf configures ", s.gpus < 0 ? "an unreadable number of" : "",
                           s.gpus < 0 ? "" : absl::StrCat(s.gpus), " GPUs (Gres=), the description's type ",
                           topology->type_of(n).name, " has ", node.gpus));
    }
    node_to_slurm[n] = it->second;
    slurm_to_node[it->second] = n;
  }
  for (int i = 0; i < static_cast<int>(slurm_nodes.size()); ++i) {
    if (slurm_to_node[i] == kNoId && slurm_nodes[i].gpus != 0 && !slurm_nodes[i].name.empty()) {
      problem(absl::StrCat("slurm.conf node ", slurm_nodes[i].name, " has GPUs but no rack lists it"));
    }
  }
  if (!problems.empty()) {
    const size_t total = problems.size();
    if (total > kMaxListedProblems) {
      problems.resize(kMaxListedProblems);
      problems.push_back(absl::StrCat("and ", total - kMaxListedProblems, " more"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(file, " disagrees with slurm.conf: ", absl::StrJoin(problems, "; ")));
  }

  std::unique_ptr<ClusterModel> model(new ClusterModel(*std::move(topology), std::move(file)));
  model->node_to_slurm_ = std::move(node_to_slurm);
  model->power_limits_enforced_ = description.power_enforcement().mode() != v1::POWER_LIMIT_MODE_DISABLED;
  model->slurm_to_node_ = std::move(slurm_to_node);
  return model;
}

}  // namespace rackwise::slurm
