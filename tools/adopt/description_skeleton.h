// Turns what a scheduler knows (an Inventory) into a cluster description skeleton: node types (one per GPU
// product, count and NVLink scope), racks with their nodes and scalable units. Watts and caps cannot be known
// from a scheduler: the skeleton guesses them and SkeletonToYaml tags each guess `!guess`, which
// `rackwise validate` refuses at its line until the administrator writes the real figure.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "node_inventory.h"
#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::adopt {

// Racks: the node's rack, else its NVLink domain (a clique or block is a rack-scale system), else one rack per
// node type ("rack-<type>", for the administrator to split). An NVLink domain must be a whole rack's nodes of one
// type, the way rackwise models rack-scale NVLink; otherwise a diagnostic names the nodes. The result passes
// ValidateClusterDescription (with the guessed figures in place).
// `guessed_scopes` (optional) receives the names of the node types whose NVLink scope the inventory could not
// tell (NodeFacts::nvlink_scope_guessed), for SkeletonToYaml to tag.
absl::StatusOr<v1::ClusterDescription> BuildSkeleton(const Inventory& inventory, std::string_view source,
                                                     Diagnostics* diagnostics,
                                                     std::set<std::string>* guessed_scopes = nullptr);

// YAML for a skeleton: the documented layout, a header saying where it came from, and `!guess` on every watts
// and cap figure (the importer knows none of them).
// The `nvlink:` line of each type in `guessed_scopes` is tagged too.
std::string SkeletonToYaml(const v1::ClusterDescription& skeleton, const std::string& header,
                           const std::set<std::string>& guessed_scopes = {});

}  // namespace rackwise::adopt
