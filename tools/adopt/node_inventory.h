// What a scheduler already knows about the GPU nodes of a cluster, gathered from slurm.conf & co. or from
// Kubernetes node labels: the facts `rackwise import` turns into a description skeleton.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include <vector>
#include "absl/strings/string_view.h"

namespace rackwise::adopt {

struct NodeFacts {
  std::string name;
  int gpus = 0;
  std::string gpu_type;               // GRES type or GPU product; empty: not known
  std::string nvlink_domain;          // a block or clique shared with other nodes; empty: the node is its own domain
  bool nvlink_scope_guessed = false;  // the block's scope could not be told from the GPUs: tagged for the admin
  std::string rack;                   // empty: not known
  std::string scalable_unit;          // empty: not known
  std::string origin;                 // "FILE:LINE" (or FILE plus the node) where the node was declared, for messages
};

// A GPU count as schedulers write it ("8"): digits only, no sign, no suffix; nullopt otherwise.
inline std::optional<int> ParseGpuCount(absl::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || text.empty()) return std::nullopt;
  return value;
}

struct Inventory {
  std::string cluster;
  std::vector<NodeFacts> nodes;  // GPU nodes only, in the order the source declares them
};

}  // namespace rackwise::adopt
