// How `place` and `explain` print decisions and refusals: JSON (the docs/design.md contract) and text for people.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise::cli {

// {"nodes":[..],"gpus":{"node":[idx,..]},"domains":N,"min_domains":N,"racks":[..],"watts":{"rack":W},
//  "rail_aligned":b,"watts_per_gpu":W}
nlohmann::json DecisionToJson(const Topology& topology, const PlacementDecision& decision);
// {"refused":true,"unresolvable":b,"message":"0/N nodes are available: ...","reasons":{"reason":count},"detail":".."}
nlohmann::json RefusalToJson(const PlacementRefusal& refusal);

std::string DecisionToText(const Topology& topology, const Ledger& ledger, const PlacementDecision& decision);
std::string RefusalToText(const PlacementRefusal& refusal);

// "1,2,3" for a GPU mask.
std::string GpuList(GpuMask mask);

}  // namespace rackwise::cli
