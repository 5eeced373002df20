// Policy names and the placements-file line of the simulator (docs/design.md).

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rackwise/gpu_mask.h"
#include "rackwise/simulator.h"

namespace rackwise {
namespace {

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          *out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

absl::StatusOr<SimPolicy> ParseSimPolicy(std::string_view name) {
  for (SimPolicy p : AllSimPolicies()) {
    if (name == SimPolicyName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", std::string(name),
                   "' (rackwise, first-fit, spread, tree-bestfit, static-cap, capped-first-fit)"));
}

const char* SimPolicyName(SimPolicy policy) {
  switch (policy) {
    case SimPolicy::kRackwise: return "rackwise";
    case SimPolicy::kFirstFit: return "first-fit";
    case SimPolicy::kSpread: return "spread";
    case SimPolicy::kTreeBestFit: return "tree-bestfit";
    case SimPolicy::kStaticCap: return "static-cap";
    case SimPolicy::kCappedFirstFit: return "capped-first-fit";
  }
  return "?";
}

std::vector<SimPolicy> AllSimPolicies() {
  return {SimPolicy::kRackwise,    SimPolicy::kFirstFit,  SimPolicy::kSpread,
          SimPolicy::kTreeBestFit, SimPolicy::kStaticCap, SimPolicy::kCappedFirstFit};
}

std::string PlacementJsonLine(const Topology& t, const std::vector<TraceJob>& jobs, const SimPlacement& p) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, jobs[p.job].id);
  absl::StrAppend(&out, ",\"start\":", absl::StrFormat("%.15g", p.start), ",\"end\":", absl::StrFormat("%.15g", p.end),
                  ",\"nodes\":[");
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(&out, t.nodes()[p.nodes[i].node].name);
  }
  out += "],\"gpus\":{";
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(&out, t.nodes()[p.nodes[i].node].name);
    out += ":[";
    out += absl::StrJoin(GpuIndices(p.nodes[i].gpus), ",");
    out += ']';
  }
  absl::StrAppend(&out, "},\"domains\":", p.domains, ",\"racks\":[");
  for (size_t i = 0; i < p.racks.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(&out, t.racks()[p.racks[i]].name);
  }
  out += "]}";
  return out;
}

}  // namespace rackwise
