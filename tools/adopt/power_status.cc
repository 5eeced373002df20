// Rows of `rackwise status`; see power_status.h.
#include "power_status.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rackwise/power_view.h"

namespace rackwise::adopt {
namespace {

double Watts(Milliwatts mw) { return static_cast<double>(mw) / 1000.0; }

PowerRow RowFromView(const PowerViewRow& v) {
  return {.kind = v.kind == PowerViewRow::Kind::kRack ? "rack" : "power_domain",
          .name = v.name,
          .parent = v.parent,
          .draw_watts = Watts(v.draw),
          .counted_watts = Watts(v.counted),
          .measured_watts = v.measured ? std::optional<double>(Watts(*v.measured)) : std::nullopt,
          .cap_watts = Watts(v.cap),
          .usable_cap_watts = Watts(v.usable_cap),
          .headroom_watts = Watts(v.headroom),
          .jobs = v.jobs,
          .used_gpus = v.used_gpus,
          .gpus = v.gpus};
}

PowerRow RowFromProto(const v1::PowerRow& p) {
  return {.kind = p.kind(),
          .name = p.name(),
          .parent = p.parent(),
          .draw_watts = p.draw_watts(),
          .counted_watts = p.counted_watts(),
          .measured_watts = p.has_measured_watts() ? std::optional<double>(p.measured_watts()) : std::nullopt,
          .cap_watts = p.cap_watts(),
          .usable_cap_watts = p.usable_cap_watts(),
          .headroom_watts = p.headroom_watts(),
          .jobs = static_cast<int>(p.jobs()),
          .used_gpus = static_cast<int>(p.used_gpus()),
          .gpus = static_cast<int>(p.gpus())};
}

}  // namespace

PowerStatus StatusFromLedger(const Ledger& ledger) {
  PowerStatus status{.cluster = ledger.topology().cluster_name(),
                     .allocations = static_cast<int>(ledger.allocation_count())};
  for (const PowerViewRow& row : BuildPowerView(ledger)) status.rows.push_back(RowFromView(row));
  return status;
}

PowerStatus StatusFromClusterState(const v1::ClusterStateResponse& state) {
  PowerStatus status{.cluster = state.cluster(), .allocations = static_cast<int>(state.allocations())};
  if (state.power_size() > 0) {
    for (const v1::PowerRow& row : state.power()) status.rows.push_back(RowFromProto(row));
    return status;
  }
  for (const v1::RackPower& r : state.racks()) {
    int free = 0, gpus = 0;
    for (const v1::DomainGpus& d : state.domains()) {
      if (d.rack() != r.rack()) continue;
      free += d.free_gpus();
      gpus += d.gpus();
    }
    status.rows.push_back({.kind = "rack",
                           .name = r.rack(),
                           .draw_watts = r.draw_watts(),
                           .counted_watts = r.draw_watts(),
                           .cap_watts = r.cap_watts(),
                           .usable_cap_watts = r.cap_watts(),
                           .headroom_watts = r.headroom_watts(),
                           .used_gpus = gpus - free,
                           .gpus = gpus});
  }
  return status;
}

std::string StatusTable(const PowerStatus& status) {
  std::string out = absl::StrFormat("cluster %s: %d jobs  (%s)\n", status.cluster, status.allocations, status.source);
  const bool steering = std::any_of(status.rows.begin(), status.rows.end(),
                                    [](const PowerRow& row) { return row.steered_watts.has_value(); });
  absl::StrAppendFormat(&out, "%-24s %10s %10s %10s %10s %10s %6s %5s %11s", "RACK / POWER DOMAIN", "DRAW kW",
                        "MEASURED", "CAP kW", "USABLE kW", "HEADROOM", "USE%", "JOBS", "GPUS");
  absl::StrAppend(&out, steering ? absl::StrFormat(" %10s %10s %5s\n", "COUNTED", "STEERED", "HELD") : "\n");
  std::map<std::string, int> depth;
  for (const PowerRow& row : status.rows) {
    int d = row.parent.empty() ? 0 : depth[row.parent] + 1;
    if (row.kind == "power_domain") depth[row.name] = d;
    std::string name = std::string(2 * d, ' ') + row.name + (row.kind == "power_domain" ? "/" : "");
    std::string jobs = row.jobs < 0 ? "-" : absl::StrCat(row.jobs);
    std::string gpus = row.gpus < 0 ? "-" : absl::StrCat(row.used_gpus, "/", row.gpus);
    std::string measured = row.measured_watts ? absl::StrFormat("%.1f", *row.measured_watts / 1000) : "-";
    // Use of the usable cap by what decisions count (the measured draw where telemetry is on).
    double use = row.usable_cap_watts > 0 ? 100.0 * row.counted_watts / row.usable_cap_watts : 0;
    absl::StrAppendFormat(&out, "%-24s %10.1f %10s %10.1f %10.1f %10.1f %5.0f%% %5s %11s", name, row.draw_watts / 1000,
                          measured, row.cap_watts / 1000, row.usable_cap_watts / 1000, row.headroom_watts / 1000, use,
                          jobs, gpus);
    if (steering)
      absl::StrAppendFormat(&out, " %10.1f %10s %5s", row.counted_watts / 1000,
                            row.steered_watts ? absl::StrFormat("%.1f", *row.steered_watts / 1000) : "-",
                            row.held_jobs < 0 ? "-" : absl::StrCat(row.held_jobs));
    absl::StrAppend(&out, "\n");
  }
  if (!status.oversubscribed.empty())
    absl::StrAppend(&out,
                    "counted oversubscribed (watts per GPU counted, declared; the GPUs' limit is the declared):\n");
  for (const OversubscribedRow& o : status.oversubscribed)
    absl::StrAppendFormat(&out, "  %s %.1f W, %.1f W\n", o.id, o.counted_watts_per_gpu, o.declared_watts_per_gpu);
  return out;
}

nlohmann::ordered_json StatusJson(const PowerStatus& status) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const PowerRow& row : status.rows) {
    nlohmann::ordered_json r = {{"kind", row.kind},
                                {"name", row.name},
                                {"parent", row.parent},
                                {"draw_watts", row.draw_watts},
                                {"counted_watts", row.counted_watts},
                                {"cap_watts", row.cap_watts},
                                {"usable_cap_watts", row.usable_cap_watts},
                                {"headroom_watts", row.headroom_watts}};
    if (row.measured_watts) r["measured_watts"] = *row.measured_watts;
    if (row.jobs >= 0) r["jobs"] = row.jobs;
    if (row.steered_watts) r["steered_watts"] = *row.steered_watts;
    if (row.held_jobs >= 0) r["held_jobs"] = row.held_jobs;
    if (row.gpus >= 0) {
      r["used_gpus"] = row.used_gpus;
      r["gpus"] = row.gpus;
    }
    rows.push_back(r);
  }
  nlohmann::ordered_json out = {
      {"cluster", status.cluster}, {"source", status.source}, {"allocations", status.allocations}, {"rows", rows}};
  if (status.oversubscribed.empty()) return out;
  nlohmann::ordered_json over = nlohmann::ordered_json::array();
  for (const OversubscribedRow& o : status.oversubscribed)
    over.push_back({{"id", o.id},
                    {"counted_watts_per_gpu", o.counted_watts_per_gpu},
                    {"declared_watts_per_gpu", o.declared_watts_per_gpu}});
  out["oversubscribed"] = over;
  return out;
}

}  // namespace rackwise::adopt
