// See decision_format.h.
#include "decision_format.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rackwise::cli {

std::string GpuList(GpuMask mask) { return absl::StrJoin(GpuIndices(mask), ","); }

nlohmann::json DecisionToJson(const Topology& t, const PlacementDecision& d) {
  nlohmann::json out;
  out["nodes"] = nlohmann::json::array();
  out["gpus"] = nlohmann::json::object();
  for (const NodeGpus& ng : d.nodes) {
    const std::string& name = t.nodes()[ng.node].name;
    out["nodes"].push_back(name);
    out["gpus"][name] = GpuIndices(ng.gpus);
  }
  out["domains"] = d.domains;
  out["min_domains"] = d.min_domains;
  out["racks"] = nlohmann::json::array();
  out["watts"] = nlohmann::json::object();
  for (const RackPower& rp : d.racks) {
    out["racks"].push_back(t.racks()[rp.rack].name);
    out["watts"][t.racks()[rp.rack].name] = MilliwattsToWatts(rp.added);
  }
  out["rail_aligned"] = d.rail_aligned;
  out["watts_per_gpu"] = MilliwattsToWatts(d.per_gpu);
  return out;
}

nlohmann::json RefusalToJson(const PlacementRefusal& r) {
  nlohmann::json out;
  out["refused"] = true;
  out["unresolvable"] = r.unresolvable;
  out["message"] = r.Message();
  out["detail"] = r.detail;
  out["reasons"] = nlohmann::json::object();
  for (int i = 0; i < static_cast<int>(NodeReason::kCount); ++i)
    if (r.counts[i] > 0) out["reasons"][NodeReasonText(static_cast<NodeReason>(i))] = r.counts[i];
  out["nodes"] = r.total_nodes;
  return out;
}

std::string DecisionToText(const Topology& t, const Ledger& l, const PlacementDecision& d) {
  int gpus = 0;
  for (const NodeGpus& ng : d.nodes) gpus += GpuCount(ng.gpus);
  std::string out = absl::StrFormat(
      "placed %d GPUs on %d node(s) in %d NVLink domain(s) (minimum %d), %d rack(s), %d scalable unit(s)%s\n\n", gpus,
      d.nodes.size(), d.domains, d.min_domains, d.racks.size(), d.scalable_units,
      d.rail_aligned ? ", rail-aligned" : ", not rail-aligned");
  absl::StrAppendFormat(&out, "  %-20s %-14s %-22s %s\n", "NODE", "RACK", "NVLINK DOMAIN", "GPUS");
  for (const NodeGpus& ng : d.nodes) {
    const Node& n = t.nodes()[ng.node];
    absl::StrAppendFormat(&out, "  %-20s %-14s %-22s %s\n", n.name, t.racks()[n.rack].name, t.domains()[n.domain].name,
                          GpuList(ng.gpus));
  }
  absl::StrAppendFormat(&out, "\n  %-14s %12s %12s %12s %12s\n", "RACK", "ADDS kW", "DRAW kW", "AFTER kW", "CAP kW");
  for (const RackPower& rp : d.racks) {
    const double draw = static_cast<double>(l.rack_draw(rp.rack)) / 1e6;
    absl::StrAppendFormat(&out, "  %-14s %12.2f %12.2f %12.2f %12.2f\n", t.racks()[rp.rack].name,
                          static_cast<double>(rp.added) / 1e6, draw, draw + static_cast<double>(rp.added) / 1e6,
                          static_cast<double>(l.rack_cap(rp.rack)) / 1e6);
  }
  return out;
}

std::string RefusalToText(const PlacementRefusal& r) {
  std::string out = absl::StrCat(r.unresolvable ? "cannot ever place: " : "cannot place now: ", r.Message(), "\n");
  for (int i = 0; i < static_cast<int>(NodeReason::kCount); ++i)
    if (r.counts[i] > 0)
      absl::StrAppendFormat(&out, "  %6d  %s\n", r.counts[i], NodeReasonText(static_cast<NodeReason>(i)));
  return out;
}

}  // namespace rackwise::cli
