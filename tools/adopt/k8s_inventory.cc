// kubectl get nodes -o json -> the GPU nodes; see k8s_inventory.h.
#include "k8s_inventory.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rackwise::adopt {
namespace {

using nlohmann::json;

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The node's GPU count: GFD's label, else the device plugin's capacity. nullopt with a message when unreadable.
std::optional<int> GpuCount(const json& item, const json& labels, std::string* problem) {
  std::string text = StringAt(labels, kGpuCountLabel);
  const char* where = kGpuCountLabel;
  if (text.empty() && item.contains("status") && item["status"].is_object()) {
    text = StringAt(item["status"].value("capacity", json::object()), "nvidia.com/gpu");
    where = "status.capacity[nvidia.com/gpu]";
  }
  if (text.empty()) return 0;
  std::optional<int> count = ParseGpuCount(text);
  if (!count) *problem = absl::StrCat(where, " is '", text, "', not a GPU count");
  return count;
}

// One NodeList item; nullopt (with a diagnostic) when it cannot be read, facts with gpus == 0 for CPU nodes.
std::optional<NodeFacts> ReadNode(const json& item, size_t index, const ConfigText& source, const K8sLabels& names,
                                  Diagnostics* diagnostics) {
  std::string name = item.is_object() ? StringAt(item.value("metadata", json::object()), "name") : "";
  auto report = [&](const std::string& message) {
    diagnostics->push_back({source.file, 0, absl::StrCat("items[", index, "] (node '", name, "'): ", message)});
  };
  if (name.empty()) {
    report("no metadata.name");
    return std::nullopt;
  }
  json labels = item["metadata"].value("labels", json::object());
  std::string problem;
  std::optional<int> gpus = GpuCount(item, labels, &problem);
  if (!gpus) {
    report(problem);
    return std::nullopt;
  }
  NodeFacts facts{.name = name,
                  .gpus = *gpus,
                  .gpu_type = StringAt(labels, kGpuProductLabel),
                  .nvlink_domain = StringAt(labels, kGpuCliqueLabel),
                  .origin = absl::StrCat(source.file, ": node '", name, "'")};
  if (!names.rack.empty()) facts.rack = StringAt(labels, names.rack.c_str());
  if (!names.scalable_unit.empty()) facts.scalable_unit = StringAt(labels, names.scalable_unit.c_str());
  if (facts.gpus > 0 && !names.rack.empty() && facts.rack.empty()) {
    report(absl::StrCat("no label ", names.rack, " (--rack-label): every GPU node needs its rack"));
    return std::nullopt;
  }
  return facts;
}

}  // namespace

absl::StatusOr<Inventory> InventoryFromK8sNodes(const ConfigText& nodes_json, const K8sLabels& labels,
                                                Diagnostics* diagnostics) {
  json list = json::parse(nodes_json.text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    diagnostics->push_back({nodes_json.file, 0, "not a NodeList (the output of `kubectl get nodes -o json`)"});
    return absl::InvalidArgumentError(diagnostics->back().ToString());
  }
  size_t before = diagnostics->size();
  Inventory inventory;
  for (size_t i = 0; i < list["items"].size(); ++i) {
    std::optional<NodeFacts> facts = ReadNode(list["items"][i], i, nodes_json, labels, diagnostics);
    if (facts && facts->gpus > 0) inventory.nodes.push_back(*std::move(facts));
  }
  if (diagnostics->size() > before) return absl::InvalidArgumentError((*diagnostics)[before].ToString());
  return inventory;
}

}  // namespace rackwise::adopt
