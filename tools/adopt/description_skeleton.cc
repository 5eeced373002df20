// Inventory -> description skeleton; see description_skeleton.h.
#include "description_skeleton.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rackwise/cluster_description.h"
#include "rackwise/guess_tag.h"
#include "rackwise/hostlist.h"

namespace rackwise::adopt {
namespace {

// A node type as the scheduler distinguishes it.
using TypeKey = std::tuple<std::string, int, bool, bool>;  // GPU type, GPUs per node, rack-scale NVLink, guessed

// Full-load watts of one GPU, by product name: a starting point, tagged as a guess.
double GuessGpuWatts(const std::string& product) {
  std::string p = absl::AsciiStrToLower(product);
  if (absl::StrContains(p, "gb200") || absl::StrContains(p, "b200")) return 1200;
  if (absl::StrContains(p, "gh200")) return 1000;
  if (absl::StrContains(p, "a100")) return 400;
  if (absl::StrContains(p, "l40")) return 350;
  return 700;  // H100/H200 SXM
}

// A YAML-friendly type name: lower case, runs of anything but [a-z0-9] turned into '-'.
std::string TypeName(const TypeKey& key) {
  const auto& [product, gpus, rack_scale, scope_guessed] = key;
  std::string name;
  for (char c : absl::AsciiStrToLower(product)) {
    bool plain = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (plain) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (name.empty()) name = absl::StrCat("gpu", gpus, rack_scale ? "-nvl" : "");
  return name;
}

class SkeletonBuilder {
 public:
  SkeletonBuilder(std::string_view source, Diagnostics* diagnostics, std::set<std::string>* guessed_scopes)
      : source_(source), diagnostics_(diagnostics), guessed_scopes_(guessed_scopes) {}
  absl::StatusOr<v1::ClusterDescription> Build(const Inventory& inventory);

 private:
  const std::string& TypeFor(const NodeFacts& node);
  std::string RackFor(const NodeFacts& node, const std::string& type);
  void CheckDomain(const NodeFacts& node, const std::string& rack, const std::string& type);
  void Report(const NodeFacts& node, std::string message) {
    diagnostics_->push_back({std::string(source_), 0, absl::StrCat(node.origin, ": ", message)});
  }

  std::string_view source_;
  Diagnostics* diagnostics_;
  std::set<std::string>* guessed_scopes_;
  v1::ClusterDescription skeleton_;
  std::map<TypeKey, std::string> types_;
  std::map<std::string, std::pair<std::string, std::string>> domain_home_;  // domain -> (rack, type)
  std::map<std::pair<std::string, std::string>, std::string> rack_domain_;  // (rack, type) -> domain
};

const std::string& SkeletonBuilder::TypeFor(const NodeFacts& node) {
  TypeKey key{node.gpu_type, node.gpus, !node.nvlink_domain.empty(), node.nvlink_scope_guessed};
  auto it = types_.find(key);
  if (it != types_.end()) return it->second;
  std::string name = TypeName(key);
  for (int suffix = 2;; ++suffix) {  // two keys may sanitise to one name (e.g. counts differ)
    bool taken = false;
    for (const auto& [k, n] : types_) taken |= n == name;
    if (!taken) break;
    name = absl::StrCat(TypeName(key), "-", suffix);
  }
  v1::NodeType* type = skeleton_.add_node_types();
  type->set_name(name);
  type->set_gpus(node.gpus);
  type->set_nvlink(node.nvlink_domain.empty() ? v1::NVLINK_SCOPE_NODE : v1::NVLINK_SCOPE_RACK);
  if (node.nvlink_scope_guessed && guessed_scopes_) guessed_scopes_->insert(name);
  double gpu_watts = GuessGpuWatts(node.gpu_type);
  double node_watts = std::round(node.gpus * gpu_watts * 1.45 / 100) * 100;  // CPUs, fans, NICs: ~45% more
  type->set_gpu_watts(gpu_watts);
  type->set_node_watts(node_watts);
  type->set_idle_watts(std::round(node_watts / 4 / 100) * 100);
  return types_.emplace(key, name).first->second;
}

std::string SkeletonBuilder::RackFor(const NodeFacts& node, const std::string& type) {
  if (!node.rack.empty()) return node.rack;
  if (!node.nvlink_domain.empty()) return node.nvlink_domain;
  return absl::StrCat("rack-", type);
}

// rackwise's rack-scale NVLink domain is all of a rack's nodes of one type: a clique or block must be exactly that.
void SkeletonBuilder::CheckDomain(const NodeFacts& node, const std::string& rack, const std::string& type) {
  if (node.nvlink_domain.empty()) return;
  auto [home, fresh] = domain_home_.try_emplace(node.nvlink_domain, rack, type);
  if (!fresh && home->second != std::make_pair(rack, type)) {
    Report(node, absl::StrCat("NVLink domain '", node.nvlink_domain, "' spans racks '", home->second.first, "' and '",
                              rack, "'; a rack-scale domain must sit in one rack"));
  }
  auto [other, first] = rack_domain_.try_emplace({rack, type}, node.nvlink_domain);
  if (!first && other->second != node.nvlink_domain) {
    Report(node, absl::StrCat("rack '", rack, "' holds two NVLink domains of type '", type, "' ('", other->second,
                              "' and '", node.nvlink_domain, "'); give each domain its own rack"));
  }
}

absl::StatusOr<v1::ClusterDescription> SkeletonBuilder::Build(const Inventory& inventory) {
  size_t before = diagnostics_->size();
  skeleton_.set_cluster(inventory.cluster.empty() ? "imported" : inventory.cluster);
  // rack -> its node groups (type -> names), in order of first appearance
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>> racks;
  std::map<std::string, std::string> rack_unit;
  for (const NodeFacts& node : inventory.nodes) {
    std::string type = TypeFor(node);
    std::string rack = RackFor(node, type);
    CheckDomain(node, rack, type);
    auto r = std::find_if(racks.begin(), racks.end(), [&](const auto& x) { return x.first == rack; });
    if (r == racks.end()) r = racks.insert(racks.end(), {rack, {}});
    auto g = std::find_if(r->second.begin(), r->second.end(), [&](const auto& x) { return x.first == type; });
    if (g == r->second.end()) g = r->second.insert(r->second.end(), {type, {}});
    g->second.push_back(node.name);
    if (!node.scalable_unit.empty()) rack_unit.try_emplace(rack, node.scalable_unit);
  }
  for (const auto& [name, groups] : racks) {
    v1::Rack* rack = skeleton_.add_racks();
    rack->set_name(name);
    double watts = 0;
    for (const auto& [type, nodes] : groups) {
      for (const v1::NodeType& t : skeleton_.node_types())
        watts += t.name() == type ? t.node_watts() * nodes.size() : 0;
      if (groups.size() == 1) {
        rack->set_type(type);
        rack->set_nodes(CompressHostlist(nodes));
      } else {
        v1::NodeGroup* g = rack->add_node_groups();
        g->set_type(type);
        g->set_nodes(CompressHostlist(nodes));
      }
    }
    rack->set_power_cap_kw(std::ceil(watts / 1000));  // every node at full load
    if (auto it = rack_unit.find(name); it != rack_unit.end()) rack->set_scalable_unit(it->second);
  }
  if (diagnostics_->size() == before) ValidateClusterDescription(skeleton_, source_, diagnostics_);
  if (diagnostics_->size() > before) return absl::InvalidArgumentError((*diagnostics_)[before].ToString());
  return skeleton_;
}

}  // namespace

absl::StatusOr<v1::ClusterDescription> BuildSkeleton(const Inventory& inventory, std::string_view source,
                                                     Diagnostics* diagnostics, std::set<std::string>* guessed_scopes) {
  if (inventory.nodes.empty()) {
    diagnostics->push_back({std::string(source), 0, "no GPU nodes found"});
    return absl::InvalidArgumentError(diagnostics->back().ToString());
  }
  return SkeletonBuilder(source, diagnostics, guessed_scopes).Build(inventory);
}

std::string SkeletonToYaml(const v1::ClusterDescription& skeleton, const std::string& header,
                           const std::set<std::string>& guessed_scopes) {
  // Every watts and cap figure in a skeleton is a guess: tag them all (the YAML writer knows no tags), and the
  // NVLink scope of the node types whose scope could not be told.
  static const std::regex kFigure(R"(^(\s+(?:- )?(?:gpu_watts|node_watts|idle_watts|power_cap_kw): ))");
  static const std::regex kName(R"(^\s+- name: (\S+)\s*$)");
  static const std::regex kScope(R"(^(\s+(?:- )?nvlink: ))");
  std::string out, current;
  for (absl::string_view line : absl::StrSplit(header, '\n', absl::SkipEmpty()))
    absl::StrAppend(&out, "# ", line, "\n");
  for (absl::string_view view : absl::StrSplit(ClusterDescriptionToYaml(skeleton), '\n')) {
    std::string line(view);
    if (std::smatch m; std::regex_match(line, m, kName)) current = m[1];
    line = std::regex_replace(line, kFigure, absl::StrCat("$1", kGuessTag, " "));
    if (guessed_scopes.contains(current)) line = std::regex_replace(line, kScope, absl::StrCat("$1", kGuessTag, " "));
    absl::StrAppend(&out, line, "\n");
  }
  while (absl::EndsWith(out, "\n\n")) out.pop_back();
  return out;
}

}  // namespace rackwise::adopt
