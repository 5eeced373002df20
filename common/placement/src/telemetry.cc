// Measured power: settings, readings -> per-rack measured draw, overdraw. See telemetry.h.
#include "rackwise/telemetry.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rackwise {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// How far a sample may be dated ahead of the face's clock and still count. Prometheus stamps an instant query's
// answer with its evaluation time (and itself drops the series of a target that stopped answering), so an
// answer is "now" on the server's clock, which may run a little apart from ours.
constexpr double kMaxClockSkewS = 5;

// A reading's watts in milliwatts when it is usable, else why not.
std::optional<Milliwatts> Usable(const PowerReading& r, double stale_after_s, double max_watts, std::string* why) {
  if (!std::isfinite(r.watts) || r.watts < 0 || r.watts > max_watts) {
    *why = absl::StrCat("reading for ", r.name, " is not a plausible number of watts: ", r.watts);
    return std::nullopt;
  }
  if (!std::isfinite(r.age_s) || r.age_s < -kMaxClockSkewS) {
    *why = absl::StrCat("reading for ", r.name, " is dated ", -r.age_s, " s in the future (clocks apart?)");
    return std::nullopt;
  }
  if (r.age_s > stale_after_s) {
    *why = absl::StrCat("reading for ", r.name, " is stale (", r.age_s, " s old, stale after ", stale_after_s, " s)");
    return std::nullopt;
  }
  return WattsToMilliwatts(r.watts);
}

// Fresh readings by name; problems reported once each (bounded, so that a huge answer cannot flood a log).
absl::flat_hash_map<std::string, Milliwatts> FreshByName(const std::vector<PowerReading>& readings,
                                                         double stale_after_s, double max_watts,
                                                         std::vector<std::string>* problems) {
  absl::flat_hash_map<std::string, Milliwatts> out;
  int reported = 0;
  for (const PowerReading& r : readings) {
    std::string why;
    if (std::optional<Milliwatts> mw = Usable(r, stale_after_s, max_watts, &why)) {
      // The same name twice (two series with one label value): keep the larger, the safe side.
      Milliwatts& slot = out[r.name];
      slot = std::max(slot, *mw);
    } else if (reported++ < 5) {
      problems->push_back(std::move(why));
    }
  }
  return out;
}

}  // namespace

const char* TelemetryStateName(TelemetryState state) {
  switch (state) {
    case TelemetryState::kOff: return "off";
    case TelemetryState::kFresh: return "fresh";
    case TelemetryState::kStale: return "stale";
  }
  return "off";
}

const char* OverdrawActionName(OverdrawAction action) {
  switch (action) {
    case OverdrawAction::kNone: return "none";
    case OverdrawAction::kLowerLimits: return "lower_limits";
    case OverdrawAction::kRequeueNewest: return "requeue_newest";
  }
  return "none";
}

TelemetrySettings TelemetrySettings::FromDescription(const v1::ClusterDescription& d) {
  TelemetrySettings s;
  if (!d.has_telemetry()) return s;
  const v1::Telemetry& t = d.telemetry();
  s.enabled = true;
  s.prometheus_url = t.prometheus_url();
  s.node_power_query = t.node_power_query();
  if (!t.node_label().empty()) s.node_label = t.node_label();
  s.rack_power_query = t.rack_power_query();
  s.rack_label = t.rack_label();
  if (t.interval_s() > 0) s.interval_s = t.interval_s();
  if (t.stale_after_s() > 0) s.stale_after_s = t.stale_after_s();
  s.reclaim_fraction = t.reclaim_pct() / 100.0;
  switch (t.on_overdraw()) {
    case v1::OVERDRAW_ACTION_LOWER_LIMITS: s.on_overdraw = OverdrawAction::kLowerLimits; break;
    case v1::OVERDRAW_ACTION_REQUEUE_NEWEST: s.on_overdraw = OverdrawAction::kRequeueNewest; break;
    default: s.on_overdraw = OverdrawAction::kNone; break;
  }
  return s;
}

MeasuredDraw MeasureRacks(const Topology& t, const TelemetrySettings& settings, const PowerReadings& readings) {
  MeasuredDraw out;
  if (!settings.enabled) return out;
  out.racks.assign(t.racks().size(), std::nullopt);
  if (!readings.nodes_ok) out.problems.push_back(absl::StrCat("node power query failed: ", readings.nodes_error));
  const bool rack_query = !settings.rack_power_query.empty();
  if (rack_query && !readings.racks_ok)
    out.problems.push_back(absl::StrCat("rack power query failed: ", readings.racks_error));
  const auto nodes = FreshByName(readings.nodes_ok ? readings.nodes : std::vector<PowerReading>{},
                                 settings.stale_after_s, kMaxNodeReadingWatts, &out.problems);
  const auto racks = FreshByName(rack_query && readings.racks_ok ? readings.racks : std::vector<PowerReading>{},
                                 settings.stale_after_s, kMaxRackReadingWatts, &out.problems);
  int unmeasured_reported = 0;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const Rack& rack = t.racks()[r];
    if (auto it = racks.find(rack.name); it != racks.end()) {
      out.racks[r] = it->second;
    } else {
      Milliwatts sum = 0;
      const Node* missing = nullptr;
      for (NodeId n : rack.nodes) {
        auto node = nodes.find(t.nodes()[n].name);
        if (node == nodes.end()) {
          missing = &t.nodes()[n];
          break;
        }
        sum += t.type_of(n).idle + node->second;
      }
      if (missing == nullptr && !rack.nodes.empty()) {
        out.racks[r] = sum;
      } else if (readings.nodes_ok && unmeasured_reported++ < 5) {
        out.problems.push_back(absl::StrCat("rack ", rack.name, " counts its estimate: no fresh reading for node ",
                                            missing ? missing->name : "(none)"));
      }
    }
    if (out.racks[r]) out.measured_racks++;
  }
  out.state =
      out.measured_racks == static_cast<int>(t.racks().size()) ? TelemetryState::kFresh : TelemetryState::kStale;
  return out;
}

void ApplyMeasuredDraw(const MeasuredDraw& measured, const TelemetrySettings& settings, bool count_recent,
                       Ledger* ledger) {
  if (measured.state == TelemetryState::kOff) {
    ledger->ClearMeasuredDraw();
    return;
  }
  ledger->SetMeasuredDraw(measured.racks, settings.reclaim_fraction, count_recent);
}

std::string MeasuredRackNote(const Ledger& l, RackId rack) {
  const std::optional<Milliwatts> now = l.measured_rack_draw_now(rack);
  if (!now) return "";
  const double reserve = l.topology().policy().power_reserve_fraction;
  return absl::StrCat("rack ", l.topology().racks()[rack].name, " measures ", Kw(*now), " (estimate ",
                      Kw(l.rack_draw(rack)), "; usable cap ", Kw(UsableCap(l.rack_cap(rack), reserve)), ")");
}

namespace {

// Whether `rack` is the overdraw's rack or below its power domain.
bool InOverdraw(const Topology& t, const Overdraw& o, RackId rack) {
  if (o.rack != kNoId) return rack == o.rack;
  const std::vector<PowerDomainId>& chain = t.racks()[rack].power_chain;
  return std::find(chain.begin(), chain.end(), o.power_domain) != chain.end();
}

}  // namespace

std::vector<Overdraw> FindOverdraws(const Ledger& l) {
  const Topology& t = l.topology();
  std::vector<Overdraw> out;
  const size_t domains = t.power_domains().size();
  std::vector<Milliwatts> domain_measured(domains, 0);
  std::vector<bool> domain_measured_whole(domains, true);
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const std::optional<Milliwatts> m = l.measured_rack_draw(r);
    if (m && *m > l.rack_cap(r)) out.push_back({.rack = r, .measured = *m, .cap = l.rack_cap(r)});
    for (PowerDomainId d : t.racks()[r].power_chain) {
      if (m) {
        domain_measured[d] += *m;
      } else {
        domain_measured_whole[d] = false;
      }
    }
  }
  for (PowerDomainId d = 0; d < static_cast<PowerDomainId>(domains); ++d) {
    if (domain_measured_whole[d] && domain_measured[d] > l.power_domain_cap(d))
      out.push_back({.power_domain = d, .measured = domain_measured[d], .cap = l.power_domain_cap(d)});
  }
  if (out.empty()) return out;
  for (const Allocation* a : l.Allocations()) {  // sorted by id
    for (Overdraw& o : out) {
      const bool here = std::any_of(a->nodes.begin(), a->nodes.end(),
                                    [&](const NodeGpus& ng) { return InOverdraw(t, o, t.nodes()[ng.node].rack); });
      if (here) o.allocations.push_back(a->id);
    }
  }
  return out;
}

std::string OverdrawScope(const Topology& t, const Overdraw& o) {
  return o.rack != kNoId ? absl::StrCat("rack ", t.racks()[o.rack].name)
                         : absl::StrCat("power domain ", t.power_domains()[o.power_domain].name);
}

std::string OverdrawMessage(const Ledger& l, const Overdraw& o) {
  return absl::StrCat(OverdrawScope(l.topology(), o), " measures ", Kw(o.measured), ", above its ", Kw(o.cap),
                      " cap; jobs on it: ", o.allocations.empty() ? "none" : absl::StrJoin(o.allocations, ", "));
}

namespace {

// An allocation's GPUs in an overdraw's rack or power domain and the watts each of them is charged (its declared
// watts, or the node type's default; a job never mixes types).
struct InOverdrawScope {
  long long gpus = 0;
  Milliwatts per_gpu = 0;
};
InOverdrawScope AllocationIn(const Ledger& l, const Allocation& a, const Overdraw& o) {
  const Topology& t = l.topology();
  InOverdrawScope in;
  for (const NodeGpus& ng : a.nodes) {
    if (!InOverdraw(t, o, t.nodes()[ng.node].rack)) continue;
    in.gpus += GpuCount(ng.gpus);
    if (in.per_gpu == 0) in.per_gpu = a.per_gpu > 0 ? a.per_gpu : t.type_of(ng.node).per_gpu;
  }
  return in;
}

}  // namespace

std::vector<std::string> PlanRequeueNewest(
    const Ledger& l, const Overdraw& o, absl::FunctionRef<std::optional<int64_t>(const std::string& id)> started_at) {
  struct Candidate {
    std::optional<int64_t> started;
    const std::string* id;
  };
  std::vector<Candidate> candidates;
  for (const std::string& id : o.allocations) candidates.push_back({started_at(id), &id});
  // Newest first: unknown start times before known ones, later before earlier, then the greater id.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.started.has_value() != b.started.has_value()) return !a.started.has_value();
    if (a.started != b.started) return *a.started > *b.started;
    return *a.id > *b.id;
  });
  std::vector<std::string> out;
  Milliwatts excess = o.measured - o.cap;
  for (const Candidate& c : candidates) {
    if (excess <= 0) break;
    const Allocation* a = l.Find(*c.id);
    if (a == nullptr) continue;  // gone since the reading (an overdraw kept by a caller across ledger changes)
    const InOverdrawScope in = AllocationIn(l, *a, o);
    out.push_back(*c.id);
    excess -= in.per_gpu * in.gpus;
  }
  return out;
}

}  // namespace rackwise
