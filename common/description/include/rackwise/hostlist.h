// Slurm hostlist syntax: "gpu[001-018]", "a[1-3,7],b[01-02]x", "node1,node2".
// Descriptions name nodes this way so that the same file reads naturally beside slurm.conf.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rackwise {

// Expands a hostlist into node names, in order. Zero padding follows the range's lower bound ("001-018" gives
// three digits). Errors (InvalidArgument) say what is wrong: unbalanced brackets, a range whose end is below its
// start, an empty name, more than `max_names` names (a guard against "n[0-999999999]").
absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, size_t max_names = 1'000'000);

// The inverse: a compact hostlist for a list of names ("gpu[001-004,007]"). Names keep their order of first
// appearance within each prefix group.
std::string CompressHostlist(const std::vector<std::string>& names);

}  // namespace rackwise
