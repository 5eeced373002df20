// The semantic rules of a cluster description; see description_validator.h. Each rule has a negative test
// file in tests/data/invalid/.
#include "description_validator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ledger_validator.h"
#include "rackwise/hostlist.h"
#include "rackwise/placement_policy.h"
#include "telemetry_validator.h"

namespace rackwise {
namespace {

constexpr double kEpsilonKw = 1e-9;

std::string Kw(double kw) { return absl::StrCat(std::round(kw * 1000.0) / 1000.0, " kW"); }

class Checker {
 public:
  Checker(const v1::ClusterDescription& d, const FieldPathLines& lines, std::string_view file, Diagnostics* out)
      : d_(d), lines_(lines), file_(file), out_(out) {}

  bool Run() {
    size_t before = out_->size();
    if (d_.cluster().empty() && !lines_.Rejected("cluster")) {
      Report("cluster", "missing 'cluster' (the cluster's name)");
    }
    if (d_.node_types_size() == 0 && !lines_.Rejected("node_types")) {
      Report("node_types", "no node types: 'node_types' must list at least one");
    }
    if (d_.racks_size() == 0 && !lines_.Rejected("racks")) Report("racks", "no racks: 'racks' must list at least one");
    CheckNodeTypes();
    CheckPowerDomains();
    CheckRacks();
    CheckPowerDomainIdle();
    CheckScalableUnits();
    CheckPolicy();
    CheckTelemetry(d_, lines_, file_, out_);
    CheckLedgerLink(d_, lines_, file_, out_);
    CheckPowerEnforcement();
    return out_->size() == before;
  }

 private:
  void Report(const std::string& path, std::string message) {
    out_->push_back({std::string(file_), lines_.Line(path), std::move(message)});
  }

  // A required amount: present, finite and above zero. Zero is never meaningful for these, and refusing it both
  // in YAML and in memory keeps the two readings (and a write/read round trip) in agreement. Returns true when
  // the value is usable.
  bool CheckRequiredPositive(const std::string& p, const std::string& field, const std::string& who,
                             const std::string& hint, double value) {
    std::string path = absl::StrCat(p, ".", field);
    if (lines_.Rejected(path)) return false;  // already reported by the mapper
    if (value == 0 && !lines_.Has(path)) {
      Report(p, absl::StrCat(who, ": missing '", field, "'", hint.empty() ? "" : " ", hint));
      return false;
    }
    if (!CheckAmount(path, absl::StrCat(who, ": ", field), value)) return false;
    if (value == 0) {
      Report(path, absl::StrCat(who, ": ", field, " must be positive"));
      return false;
    }
    return true;
  }

  // A number that must be finite and not negative. Returns false (after reporting) when it is not.
  bool CheckAmount(const std::string& path, const std::string& what, double value) {
    if (!std::isfinite(value)) {
      Report(path, absl::StrCat(what, " is not a finite number"));
      return false;
    }
    if (value < 0) {
      Report(path, absl::StrCat(what, " must not be negative, got ", value));
      return false;
    }
    return true;
  }

  // A bound from power_bounds.h: reports `what` above `max` (in `unit`). NaN and negatives are CheckAmount's.
  void CheckAtMost(const std::string& path, const std::string& what, double value, double max, const char* unit) {
    if (std::isfinite(value) && value > max) {
      Report(path, absl::StrCat(what, " must be at most ", static_cast<int64_t>(max), " ", unit,
                                " (a physical bound), got ", value));
    }
  }

  // The name of element `i` of `list` ("racks"): reports a missing or repeated one. `first` maps each name to
  // the index that used it first. Returns true when the name is present and new.
  bool CheckName(const std::string& list, int i, const std::string& kind, const std::string& name,
                 absl::flat_hash_map<std::string, int>* first) {
    std::string p = absl::StrCat(list, "[", i, "]");
    if (name.empty()) {
      if (!lines_.Rejected(p + ".name")) Report(p, absl::StrCat(p, ": missing 'name'"));
      return false;
    }
    auto [it, inserted] = first->try_emplace(name, i);
    if (!inserted) {
      Report(p + ".name", absl::StrCat("duplicate ", kind, " '", name, "' (first on line ",
                                       lines_.Line(absl::StrCat(list, "[", it->second, "]")), ")"));
    }
    return inserted;
  }

  void CheckNodeTypes() {
    for (int i = 0; i < d_.node_types_size(); ++i) {
      const v1::NodeType& t = d_.node_types(i);
      std::string p = absl::StrCat("node_types[", i, "]");
      std::string who = t.name().empty() ? p : absl::StrCat("node type '", t.name(), "'");
      CheckName("node_types", i, "node type", t.name(), &type_index_);
      if (lines_.Rejected(p + ".gpus")) {
        // already reported by the mapper
      } else if (t.gpus() == 0 && !lines_.Has(p + ".gpus")) {
        Report(p, absl::StrCat(who, ": missing 'gpus' (GPUs per node)"));
      } else if (t.gpus() < 1 || t.gpus() > static_cast<uint32_t>(kMaxGpusPerNode)) {
        Report(p + ".gpus", absl::StrCat(who, ": gpus must be between 1 and ", kMaxGpusPerNode, ", got ", t.gpus()));
      }
      if (t.nvlink() == v1::NVLINK_SCOPE_UNSPECIFIED && !lines_.Rejected(p + ".nvlink")) {
        Report(p + ".nvlink", absl::StrCat(who, ": missing 'nvlink' (node or rack)"));
      } else if (!v1::NvlinkScope_IsValid(t.nvlink())) {
        Report(p + ".nvlink", absl::StrCat(who, ": unknown nvlink value ", static_cast<int>(t.nvlink())));
      }
      if (CheckAmount(p + ".gpu_watts", who + ": gpu_watts", t.gpu_watts()))
        CheckAtMost(p + ".gpu_watts", who + ": gpu_watts", t.gpu_watts(), kMaxWattsPerGpu, "W");
      bool node_ok = CheckRequiredPositive(p, "node_watts", who, "(the whole node at full load)", t.node_watts());
      if (node_ok) CheckAtMost(p + ".node_watts", who + ": node_watts", t.node_watts(), kMaxNodeWatts, "W");
      bool idle_ok = CheckRequiredPositive(p, "idle_watts", who, "(the whole node idle)", t.idle_watts());
      if (node_ok && idle_ok && t.idle_watts() > t.node_watts()) {
        Report(p + ".idle_watts",
               absl::StrCat(who, ": idle_watts (", t.idle_watts(), ") is above node_watts (", t.node_watts(), ")"));
      } else if (node_ok && idle_ok && t.gpus() >= 1 &&
                 t.node_watts() - t.idle_watts() < kMinWattsPerGpu * static_cast<double>(t.gpus())) {
        // Otherwise an allocated GPU would cost (next to) nothing by default: a job could run for free.
        Report(p + ".node_watts",
               absl::StrCat(who, ": node_watts (", t.node_watts(), ") must exceed idle_watts (", t.idle_watts(),
                            ") by at least ", kMinWattsPerGpu, " W per GPU (what the GPUs add at full load)"));
      }
    }
  }

  void CheckPowerDomains() {
    for (int i = 0; i < d_.power_domains_size(); ++i) {
      const v1::PowerDomain& pd = d_.power_domains(i);
      std::string p = absl::StrCat("power_domains[", i, "]");
      std::string who = pd.name().empty() ? p : absl::StrCat("power domain '", pd.name(), "'");
      CheckName("power_domains", i, "power domain", pd.name(), &domain_index_);
      CheckCap(p, who, pd.power_cap_kw());
    }
    parent_.assign(d_.power_domains_size(), -1);
    for (int i = 0; i < d_.power_domains_size(); ++i) {
      const v1::PowerDomain& pd = d_.power_domains(i);
      if (pd.parent().empty()) continue;
      auto it = domain_index_.find(pd.parent());
      if (it == domain_index_.end()) {
        Report(absl::StrCat("power_domains[", i, "].parent"),
               absl::StrCat("power domain '", pd.name(), "': unknown parent power domain '", pd.parent(), "'"));
      } else {
        parent_[i] = it->second;
      }
    }
    FindCycles();
  }

  // The parent links form a functional graph: walk up from every domain, colouring the path.
  void FindCycles() {
    int n = d_.power_domains_size();
    in_cycle_.assign(n, false);
    std::vector<int> state(n, 0);  // 0 unvisited, 1 on the current path, 2 done
    for (int start = 0; start < n; ++start) {
      std::vector<int> path;
      int v = start;
      while (v >= 0 && state[v] == 0) {
        state[v] = 1;
        path.push_back(v);
        v = parent_[v];
      }
      if (v >= 0 && state[v] == 1) {  // the path ran into itself: a new cycle starting at v
        std::vector<int> cycle;
        size_t k = 0;
        while (path[k] != v) ++k;
        cycle.assign(path.begin() + k, path.end());
        int first = *std::min_element(cycle.begin(), cycle.end());
        std::vector<std::string> names;
        size_t at = std::find(cycle.begin(), cycle.end(), first) - cycle.begin();
        for (size_t j = 0; j <= cycle.size(); ++j) {
          int member = cycle[(at + j) % cycle.size()];
          names.push_back(d_.power_domains(member).name());
          in_cycle_[member] = true;
        }
        Report(absl::StrCat("power_domains[", first, "].parent"),
               absl::StrCat("power domains form a cycle: ", absl::StrJoin(names, " -> ")));
      }
      for (int u : path) state[u] = 2;
    }
  }

  void CheckCap(const std::string& p, const std::string& who, double cap) {
    if (CheckRequiredPositive(p, "power_cap_kw", who, "", cap))
      CheckAtMost(p + ".power_cap_kw", who + ": power_cap_kw", cap, kMaxCapKw, "kW");
  }

  void CheckRacks() {
    absl::flat_hash_map<std::string, int> rack_index;  // name -> first index
    rack_idle_kw_.assign(d_.racks_size(), 0);
    rack_types_.assign(d_.racks_size(), {});
    for (int i = 0; i < d_.racks_size(); ++i) {
      const v1::Rack& rack = d_.racks(i);
      std::string p = absl::StrCat("racks[", i, "]");
      std::string who = rack.name().empty() ? p : absl::StrCat("rack '", rack.name(), "'");
      if (CheckName("racks", i, "rack", rack.name(), &rack_index) && domain_index_.contains(rack.name())) {
        Report(p + ".name", absl::StrCat("rack '", rack.name(), "' has the name of a power domain (line ",
                                         lines_.Line(absl::StrCat("power_domains[", domain_index_[rack.name()], "]")),
                                         "): cap overrides name either, so names must be unique"));
      }
      CheckCap(p, who, rack.power_cap_kw());
      if (!rack.power_domain().empty() && !domain_index_.contains(rack.power_domain())) {
        Report(p + ".power_domain", absl::StrCat(who, ": unknown power domain '", rack.power_domain(), "'"));
      }
      CheckRackNodes(i, p, who);
      if (std::isfinite(rack.power_cap_kw()) && rack.power_cap_kw() > 0 &&
          rack_idle_kw_[i] > rack.power_cap_kw() + kEpsilonKw) {
        Report(p + ".power_cap_kw", absl::StrCat(who, ": idle draw ", Kw(rack_idle_kw_[i]),
                                                 " already exceeds its power cap ", Kw(rack.power_cap_kw())));
      }
    }
  }

  void CheckRackNodes(int i, const std::string& p, const std::string& who) {
    const v1::Rack& rack = d_.racks(i);
    bool shorthand = !rack.type().empty() || !rack.nodes().empty();
    if (shorthand && rack.node_groups_size() > 0) {
      Report(p + ".node_groups", absl::StrCat(who, ": give either type and nodes or node_groups, not both"));
      return;
    }
    if (!shorthand && rack.node_groups_size() == 0) {
      if (lines_.Rejected(p + ".node_groups") || lines_.Rejected(p + ".nodes") || lines_.Rejected(p + ".type")) {
        return;
      }
      Report(p, absl::StrCat(who, ": missing 'type' and 'nodes' (or 'node_groups')"));
      return;
    }
    if (shorthand) {
      CheckGroup(i, p, who, rack.type(), rack.nodes());
    } else {
      for (int g = 0; g < rack.node_groups_size(); ++g) {
        std::string gp = absl::StrCat(p, ".node_groups[", g, "]");
        CheckGroup(i, gp, who, rack.node_groups(g).type(), rack.node_groups(g).nodes());
      }
    }
    // A rack-scale NVLink domain spans the rack: it cannot share the rack with nodes of another type.
    const std::vector<int>& types = rack_types_[i];
    for (int t : types) {
      if (d_.node_types(t).nvlink() != v1::NVLINK_SCOPE_RACK) continue;
      for (int other : types) {
        if (other == t) continue;
        Report(p, absl::StrCat(who, ": rack-scale NVLink type '", d_.node_types(t).name(),
                               "' (nvlink: rack) cannot share a rack with type '", d_.node_types(other).name(), "'"));
        return;
      }
    }
  }

  void CheckGroup(int rack_index, const std::string& p, const std::string& who, const std::string& type,
                  const std::string& nodes) {
    int type_index = -1;
    if (type.empty()) {
      if (!lines_.Rejected(p + ".type")) Report(p, absl::StrCat(who, ": missing 'type'"));
    } else if (auto it = type_index_.find(type); it == type_index_.end()) {
      Report(p + ".type", absl::StrCat(who, ": unknown node type '", type, "'"));
    } else {
      type_index = it->second;
      std::vector<int>& types = rack_types_[rack_index];
      if (std::find(types.begin(), types.end(), type_index) == types.end()) types.push_back(type_index);
    }
    if (nodes.empty()) {
      if (!lines_.Rejected(p + ".nodes")) {
        Report(p, absl::StrCat(who, ": missing 'nodes' (a hostlist such as gpu[001-018])"));
      }
      return;
    }
    if (node_count_ >= kMaxClusterNodes) return;  // already reported
    absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(nodes, kMaxClusterNodes);
    if (!names.ok()) {
      Report(p + ".nodes", absl::StrCat(who, ": ", names.status().message()));
      return;
    }
    node_count_ += names->size();
    if (node_count_ > kMaxClusterNodes) {
      Report(p + ".nodes", absl::StrCat("more than ", kMaxClusterNodes, " nodes in the cluster"));
      return;
    }
    int line = lines_.Line(p + ".nodes");
    std::string repeated_first;
    int repeated = 0;
    std::string taken_first;
    int taken_rack = -1;
    int taken = 0;
    for (std::string& name : *names) {
      auto [it, inserted] = node_rack_.try_emplace(std::move(name), rack_index, line);
      if (inserted) continue;
      if (it->second.first == rack_index) {
        if (repeated++ == 0) repeated_first = it->first;
      } else if (taken++ == 0) {
        taken_first = it->first;
        taken_rack = it->second.first;
      }
    }
    auto more = [](int n) { return n > 1 ? absl::StrCat(" (and ", n - 1, " more)") : std::string(); };
    if (repeated > 0) {
      Report(p + ".nodes", absl::StrCat(who, ": node ", repeated_first, more(repeated), " is listed twice"));
    }
    if (taken > 0) {
      Report(p + ".nodes", absl::StrCat(who, ": node ", taken_first, more(taken), " is already in rack '",
                                        d_.racks(taken_rack).name(), "' (line ", node_rack_[taken_first].second, ")"));
    }
    if (type_index >= 0 && std::isfinite(d_.node_types(type_index).idle_watts())) {
      rack_idle_kw_[rack_index] += names->size() * d_.node_types(type_index).idle_watts() / 1000.0;
    }
  }

  void CheckPowerDomainIdle() {
    int n = d_.power_domains_size();
    if (n == 0) return;
    std::vector<double> idle(n, 0);
    for (int r = 0; r < d_.racks_size(); ++r) {
      auto it = domain_index_.find(d_.racks(r).power_domain());
      if (it == domain_index_.end()) continue;
      // Add the rack's idle draw to its domain and every ancestor (at most n steps: cycles end the walk).
      int v = it->second;
      for (int steps = 0; v >= 0 && steps < n && !in_cycle_[v]; ++steps, v = parent_[v]) {
        idle[v] += rack_idle_kw_[r];
      }
    }
    for (int i = 0; i < n; ++i) {
      const v1::PowerDomain& pd = d_.power_domains(i);
      if (in_cycle_[i] || !std::isfinite(pd.power_cap_kw()) || pd.power_cap_kw() <= 0) continue;
      if (idle[i] > pd.power_cap_kw() + kEpsilonKw) {
        Report(absl::StrCat("power_domains[", i, "].power_cap_kw"),
               absl::StrCat("power domain '", pd.name(), "': idle draw of the racks below it ", Kw(idle[i]),
                            " already exceeds its power cap ", Kw(pd.power_cap_kw())));
      }
    }
  }

  // Rails only make sense within one node type: GPU i of every node in a scalable unit shares rail switch i.
  void CheckScalableUnits() {
    absl::flat_hash_map<std::string, std::pair<int, int>> su_type;  // unit -> (type, first rack)
    for (int r = 0; r < d_.racks_size(); ++r) {
      const v1::Rack& rack = d_.racks(r);
      if (rack.scalable_unit().empty()) continue;
      for (int t : rack_types_[r]) {
        auto [it, inserted] = su_type.try_emplace(rack.scalable_unit(), t, r);
        if (inserted || it->second.first == t) continue;
        Report(absl::StrCat("racks[", r, "].scalable_unit"),
               absl::StrCat("scalable unit '", rack.scalable_unit(), "' mixes node types '",
                            d_.node_types(it->second.first).name(), "' (rack '", d_.racks(it->second.second).name(),
                            "') and '", d_.node_types(t).name(), "' (rack '", rack.name(), "')"));
        break;
      }
    }
  }

  void CheckPolicy() {
    if (!d_.has_policy()) return;
    const v1::Policy& policy = d_.policy();
    if (!v1::Locality_IsValid(policy.default_locality())) {
      Report("policy.default_locality",
             absl::StrCat("policy: unknown default_locality value ", static_cast<int>(policy.default_locality())));
    }
    if (CheckAmount("policy.power_reserve_pct", "policy: power_reserve_pct", policy.power_reserve_pct()) &&
        policy.power_reserve_pct() > 50) {
      Report("policy.power_reserve_pct",
             absl::StrCat("policy: power_reserve_pct must be between 0 and 50, got ", policy.power_reserve_pct()));
    }
    CheckAmount("policy.preferred_wait_s", "policy: preferred_wait_s", policy.preferred_wait_s());
    // A fraction of the job's time limit: above 1 a spread start would be taken to cost more than a second run.
    if (CheckAmount("policy.spread_cost_fraction", "policy: spread_cost_fraction", policy.spread_cost_fraction()) &&
        policy.spread_cost_fraction() > kMaxSpreadCostFraction) {
      Report("policy.spread_cost_fraction",
             absl::StrCat("policy: spread_cost_fraction must be between 0 and ", kMaxSpreadCostFraction,
                          " (a fraction of the job's time limit), got ", policy.spread_cost_fraction()));
    }
    bool min_ok = CheckAmount("policy.min_watts_per_gpu", "policy: min_watts_per_gpu", policy.min_watts_per_gpu());
    bool max_ok = CheckAmount("policy.max_watts_per_gpu", "policy: max_watts_per_gpu", policy.max_watts_per_gpu());
    if (min_ok) {
      CheckAtMost("policy.min_watts_per_gpu", "policy: min_watts_per_gpu", policy.min_watts_per_gpu(), kMaxWattsPerGpu,
                  "W");
    }
    if (max_ok) {
      CheckAtMost("policy.max_watts_per_gpu", "policy: max_watts_per_gpu", policy.max_watts_per_gpu(), kMaxWattsPerGpu,
                  "W");
    }
    if (min_ok && max_ok && policy.max_watts_per_gpu() > 0 && policy.min_watts_per_gpu() > policy.max_watts_per_gpu()) {
      Report("policy.min_watts_per_gpu",
             absl::StrCat("policy: min_watts_per_gpu (", policy.min_watts_per_gpu(), ") is above max_watts_per_gpu (",
                          policy.max_watts_per_gpu(), ")"));
    }
    if (policy.has_weights()) {
      const v1::Weights& w = policy.weights();
      CheckAmount("policy.weights.domain_packing", "policy: weights.domain_packing", w.domain_packing());
      CheckAmount("policy.weights.rack_packing", "policy: weights.rack_packing", w.rack_packing());
      CheckAmount("policy.weights.rail_alignment", "policy: weights.rail_alignment", w.rail_alignment());
      CheckAmount("policy.weights.power_headroom", "policy: weights.power_headroom", w.power_headroom());
    }
    CheckSteering(policy);
  }

  // Steering's knobs, and oversubscription only where steering can guarantee the caps.
  void CheckSteering(const v1::Policy& policy) {
    const v1::Steering& st = policy.steering();
    if (CheckAmount("policy.steering.hysteresis_pct", "policy: steering.hysteresis_pct", st.hysteresis_pct()) &&
        st.hysteresis_pct() > 50)
      Report("policy.steering.hysteresis_pct",
             absl::StrCat("policy: steering.hysteresis_pct must be between 0 and 50, got ", st.hysteresis_pct()));
    if (CheckAmount("policy.steering.floor_pct", "policy: steering.floor_pct", st.floor_pct()) && st.floor_pct() > 100)
      Report("policy.steering.floor_pct",
             absl::StrCat("policy: steering.floor_pct must be between 1 and 100, got ", st.floor_pct()));
    const double over = policy.oversubscribe_pct();
    if (!CheckAmount("policy.oversubscribe_pct", "policy: oversubscribe_pct", over) || over == 0) return;
    if (over > 50) {
      Report("policy.oversubscribe_pct",
             absl::StrCat("policy: oversubscribe_pct must be between 0 and 50, got ", over));
    } else if (!d_.has_telemetry() || d_.telemetry().on_overdraw() != v1::OVERDRAW_ACTION_LOWER_LIMITS) {
      Report("policy.oversubscribe_pct",
             "policy: oversubscribe_pct needs steering (telemetry with on_overdraw: lower_limits): without it "
             "nothing holds the caps when jobs draw what they declared");
    }
  }

  // Every node's prolog creates state_dir with its parents: a path that cannot name one directory on every
  // node is refused here rather than found out by a job's prolog.
  void CheckStateDir(const std::string& dir) {
    const std::string field = "power_enforcement.state_dir";
    if (dir[0] != '/') {
      Report(field, absl::StrCat("power_enforcement: state_dir must be an absolute path, got '", dir, "'"));
      return;
    }
    for (absl::string_view part : absl::StrSplit(dir, '/')) {
      if (part == "." || part == "..") {
        Report(field, absl::StrCat("power_enforcement: state_dir must not contain '.' or '..', got '", dir, "'"));
        return;
      }
    }
    for (size_t at = dir.find('%'); at != std::string::npos; at = dir.find('%', at + 2)) {
      if (dir.compare(at, 2, "%n") != 0) {
        Report(field, absl::StrCat("power_enforcement: state_dir: only %n (the node's name) is replaced, got '",
                                   dir.substr(at, 2), "' in '", dir, "'"));
        return;
      }
    }
  }

  void CheckPowerEnforcement() {
    const v1::PowerEnforcement& e = d_.power_enforcement();
    if (!v1::PowerLimitMode_IsValid(e.mode())) {
      Report("power_enforcement.mode",
             absl::StrCat("power_enforcement: unknown mode value ", static_cast<int>(e.mode())));
    }
    if (!e.state_dir().empty()) CheckStateDir(e.state_dir());
    for (const auto& [path, value] : {std::pair{"nvml_library", &e.nvml_library()}, {"state_dir", &e.state_dir()}}) {
      if (value->find_first_of(std::string_view("\0\n", 2)) != std::string::npos) {
        Report(absl::StrCat("power_enforcement.", path),
               absl::StrCat("power_enforcement: ", path, " must not contain a NUL or a line break"));
      }
    }
  }

  const v1::ClusterDescription& d_;
  const FieldPathLines& lines_;
  std::string_view file_;
  Diagnostics* out_;

  absl::flat_hash_map<std::string, int> type_index_;
  absl::flat_hash_map<std::string, int> domain_index_;
  std::vector<int> parent_;
  std::vector<bool> in_cycle_;
  std::vector<double> rack_idle_kw_;
  std::vector<std::vector<int>> rack_types_;                         // node types per rack, first use order
  absl::flat_hash_map<std::string, std::pair<int, int>> node_rack_;  // node -> (rack, line of its hostlist)
  size_t node_count_ = 0;
};

}  // namespace

bool CheckDescription(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                      Diagnostics* diagnostics) {
  return Checker(description, lines, file, diagnostics).Run();
}

std::vector<DescribedNode> DescribedNodes(const v1::ClusterDescription& description) {
  absl::flat_hash_map<std::string, int> types;
  for (int i = 0; i < description.node_types_size(); ++i) types.try_emplace(description.node_types(i).name(), i);
  std::vector<DescribedNode> nodes;
  auto add = [&](int rack, const std::string& type, const std::string& hostlist) {
    if (nodes.size() >= kMaxClusterNodes) return;
    absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist, kMaxClusterNodes - nodes.size());
    if (!names.ok()) return;
    auto it = types.find(type);
    int t = it == types.end() ? -1 : it->second;
    int gpus = t < 0 ? 0 : static_cast<int>(std::min<uint32_t>(description.node_types(t).gpus(), 64));
    for (std::string& name : *names) nodes.push_back(DescribedNode{std::move(name), rack, t, gpus});
  };
  for (int r = 0; r < description.racks_size(); ++r) {
    const v1::Rack& rack = description.racks(r);
    if (!rack.nodes().empty()) add(r, rack.type(), rack.nodes());
    for (const v1::NodeGroup& g : rack.node_groups()) add(r, g.type(), g.nodes());
  }
  return nodes;
}

}  // namespace rackwise
