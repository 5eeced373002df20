// What `rackwise status --ledger` shows: the shared power ledger's leader, and per rack its cap and what each kind
// of owner (Slurm jobs, Kubernetes pods, anything else) adds to its idle draw, from the ledger service's Status
// (proto/rackwise/v1/ledger_service.proto).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rackwise/v1/ledger_service.pb.h"

namespace rackwise::adopt {

// One line per rack: cap, idle, Slurm, Kubernetes, other, total draw, and what is left under the cap.
std::string LedgerStatusTable(const v1::StatusResponse& status, const std::string& source);
nlohmann::ordered_json LedgerStatusJson(const v1::StatusResponse& status, const std::string& source);

}  // namespace rackwise::adopt
