// The shared power ledger's status, by owner. See ledger_status.h.
#include "ledger_status.h"

#include "absl/strings/str_format.h"

namespace rackwise::adopt {
namespace {

double DrawKw(const v1::RackDraw& rack) { return rack.idle_kw() + rack.slurm_kw() + rack.k8s_kw() + rack.other_kw(); }

std::string Leader(const v1::StatusResponse& status) {
  if (status.leader_id().empty()) return "no leader";
  return absl::StrFormat("leader %s at %s", status.leader_id(), status.leader_address());
}

}  // namespace

std::string LedgerStatusTable(const v1::StatusResponse& status, const std::string& source) {
  std::string out =
      absl::StrFormat("shared power ledger: %d allocations, %s  (%s)\n", status.allocations(), Leader(status), source);
  absl::StrAppendFormat(&out, "%-24s %9s %9s %9s %9s %9s %9s %9s\n", "RACK", "CAP kW", "IDLE kW", "SLURM kW", "K8S kW",
                        "OTHER kW", "DRAW kW", "LEFT kW");
  for (const v1::RackDraw& rack : status.racks()) {
    absl::StrAppendFormat(&out, "%-24s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", rack.rack(), rack.cap_kw(),
                          rack.idle_kw(), rack.slurm_kw(), rack.k8s_kw(), rack.other_kw(), DrawKw(rack),
                          rack.cap_kw() - DrawKw(rack));
  }
  return out;
}

nlohmann::ordered_json LedgerStatusJson(const v1::StatusResponse& status, const std::string& source) {
  nlohmann::ordered_json racks = nlohmann::ordered_json::array();
  for (const v1::RackDraw& rack : status.racks()) {
    racks.push_back({{"rack", rack.rack()},
                     {"cap_kw", rack.cap_kw()},
                     {"idle_kw", rack.idle_kw()},
                     {"slurm_kw", rack.slurm_kw()},
                     {"k8s_kw", rack.k8s_kw()},
                     {"other_kw", rack.other_kw()},
                     {"draw_kw", DrawKw(rack)},
                     {"left_kw", rack.cap_kw() - DrawKw(rack)}});
  }
  return {{"source", source},
          {"leader_id", status.leader_id()},
          {"leader_address", status.leader_address()},
          {"replica_id", status.replica_id()},
          {"serving", status.serving()},
          {"allocations", status.allocations()},
          {"racks", racks}};
}

}  // namespace rackwise::adopt
