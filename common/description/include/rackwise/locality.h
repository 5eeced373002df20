// The names of Locality values as users write them, one spelling for every face: `--nvlink=` in Slurm, the
// `rackwise.io/nvlink` annotation, the CLI's `--locality`, trace files and reports.
#pragma once

#include <optional>
#include <string_view>

#include "rackwise/placement_policy.h"

namespace rackwise {

// "required" | "preferred" | "none"; case does not matter and surrounding blanks are ignored. nullopt for
// anything else (faces name their field in the error).
std::optional<Locality> ParseLocality(std::string_view text);

// "required", "preferred" or "none".
const char* LocalityName(Locality locality);

inline constexpr char kLocalityChoices[] = "required, preferred, none";

}  // namespace rackwise
