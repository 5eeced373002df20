// The rules of a state file; see state_validator.h. Negative test files live in tests/data/invalid_state/.
// Built for 100k allocations: names and paths are only spelled out when something is reported, and the
// GPU-owner and id tables hold integers and views into `state`, not copies of names.
#include "state_validator.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "description_validator.h"
#include "rackwise/power_bounds.h"

namespace rackwise {
namespace {

using Ref = LineTable::Ref;

template <typename M>
int FieldIndex(int number) {
  return M::descriptor()->FindFieldByNumber(number)->index();
}

// The LineTable field indices of the schema's fields, looked up once.
struct Fields {
  int allocations = FieldIndex<v1::ClusterState>(v1::ClusterState::kAllocationsFieldNumber);
  int statuses = FieldIndex<v1::ClusterState>(v1::ClusterState::kNodesFieldNumber);
  int caps = FieldIndex<v1::ClusterState>(v1::ClusterState::kCapsFieldNumber);
  int id = FieldIndex<v1::Allocation>(v1::Allocation::kIdFieldNumber);
  int nodes = FieldIndex<v1::Allocation>(v1::Allocation::kNodesFieldNumber);
  int watts = FieldIndex<v1::Allocation>(v1::Allocation::kWattsPerGpuFieldNumber);
  int node = FieldIndex<v1::NodeGpus>(v1::NodeGpus::kNodeFieldNumber);
  int gpus = FieldIndex<v1::NodeGpus>(v1::NodeGpus::kGpusFieldNumber);
  int status_node = FieldIndex<v1::NodeStatus>(v1::NodeStatus::kNodeFieldNumber);
  int health = FieldIndex<v1::NodeStatus>(v1::NodeStatus::kHealthFieldNumber);
  int failed_gpus = FieldIndex<v1::NodeStatus>(v1::NodeStatus::kFailedGpusFieldNumber);
  int cap_name = FieldIndex<v1::CapOverride>(v1::CapOverride::kNameFieldNumber);
  int cap_kw = FieldIndex<v1::CapOverride>(v1::CapOverride::kPowerCapKwFieldNumber);
  int measured = FieldIndex<v1::ClusterState>(v1::ClusterState::kMeasuredFieldNumber);
  int reclaim = FieldIndex<v1::ClusterState>(v1::ClusterState::kMeasuredReclaimPctFieldNumber);
  int reading_rack = FieldIndex<v1::RackReading>(v1::RackReading::kRackFieldNumber);
  int reading_kw = FieldIndex<v1::RackReading>(v1::RackReading::kMeasuredKwFieldNumber);
  int oversubscribed = FieldIndex<v1::ClusterState>(v1::ClusterState::kOversubscribedFieldNumber);
  int over_id = FieldIndex<v1::OversubscribedAllocation>(v1::OversubscribedAllocation::kIdFieldNumber);
  int over_declared =
      FieldIndex<v1::OversubscribedAllocation>(v1::OversubscribedAllocation::kDeclaredWattsPerGpuFieldNumber);
  int over_counted =
      FieldIndex<v1::OversubscribedAllocation>(v1::OversubscribedAllocation::kCountedWattsPerGpuFieldNumber);
};

struct KnownNode {
  uint32_t index;
  int gpus;
};

class StateChecker {
 public:
  StateChecker(const v1::ClusterState& s, const v1::ClusterDescription& d, const LineTable& lines,
               std::string_view file, Diagnostics* out)
      : s_(s), lines_(lines), file_(file), out_(out) {
    for (const DescribedNode& n : DescribedNodes(d)) {
      nodes_.try_emplace(n.name, KnownNode{static_cast<uint32_t>(nodes_.size()), n.gpus});
    }
    for (const v1::Rack& r : d.racks()) rack_names_.insert(r.name());
    cap_names_ = rack_names_;
    for (const v1::PowerDomain& pd : d.power_domains()) cap_names_.insert(pd.name());
  }

  bool Run() {
    size_t before = out_->size();
    ids_.reserve(static_cast<size_t>(s_.allocations_size()));  // no rehashing on the way to 100k
    gpu_owner_.reserve(static_cast<size_t>(s_.allocations_size()));
    for (int a = 0; a < s_.allocations_size(); ++a) CheckAllocation(a);
    CheckNodes();
    CheckCaps();
    CheckMeasured();
    CheckOversubscribed();
    return out_->size() == before;
  }

 private:
  void Report(int line, std::string message) { out_->push_back({std::string(file_), line, std::move(message)}); }

  static std::string AllocationPath(int a) { return absl::StrCat("allocations[", a, "]"); }
  static std::string Who(const v1::Allocation& alloc, int a) {
    return alloc.id().empty() ? AllocationPath(a) : absl::StrCat("allocation '", alloc.id(), "'");
  }

  // The described node named by field `node_field` of `ref`, or nullptr (after reporting) when there is none.
  // `who` names the entry in a diagnostic (only spelled out when there is one).
  const KnownNode* Find(Ref ref, int node_field, const std::string& node, absl::FunctionRef<std::string()> who) {
    if (node.empty()) {
      if (!lines_.Rejected(ref, node_field)) Report(lines_.Line(ref), absl::StrCat(who(), ": missing 'node'"));
      return nullptr;
    }
    auto it = nodes_.find(node);
    if (it == nodes_.end()) {
      Report(lines_.FieldLine(ref, node_field),
             absl::StrCat(who(), ": unknown node '", node, "' (not in any rack of the description)"));
      return nullptr;
    }
    return &it->second;
  }

  bool CheckIndex(int line, uint32_t gpu, int gpus, const std::string& node, const std::string& who) {
    if (static_cast<int64_t>(gpu) < gpus) return true;
    Report(line, absl::StrCat(who, ": GPU index ", gpu, " is out of range for node '", node, "' (", gpus, " GPUs: 0..",
                              gpus - 1, ")"));
    return false;
  }

  void CheckAllocation(int a) {
    const v1::Allocation& alloc = s_.allocations(a);
    Ref ref = lines_.Child(lines_.Root(), f_.allocations, a);
    if (alloc.id().empty()) {
      if (!lines_.Rejected(ref, f_.id)) Report(lines_.Line(ref), absl::StrCat(AllocationPath(a), ": missing 'id'"));
    } else if (auto [it, inserted] = ids_.try_emplace(alloc.id(), a); !inserted) {
      Report(lines_.FieldLine(ref, f_.id), absl::StrCat("duplicate allocation id '", alloc.id(), "' (first on line ",
                                                        AllocationLine(it->second), ")"));
    }
    if (!std::isfinite(alloc.watts_per_gpu()) || alloc.watts_per_gpu() < 0) {
      Report(lines_.FieldLine(ref, f_.watts),
             absl::StrCat(Who(alloc, a), ": watts_per_gpu must be a finite number, not negative, got ",
                          alloc.watts_per_gpu()));
    } else if (absl::Status bad = CheckWattsPerGpu(alloc.watts_per_gpu()); !bad.ok()) {
      Report(lines_.FieldLine(ref, f_.watts), absl::StrCat(Who(alloc, a), ": ", bad.message()));
    }
    if (alloc.nodes_size() == 0) Report(lines_.Line(ref), absl::StrCat(Who(alloc, a), ": no nodes"));
    nodes_seen_.clear();
    for (int n = 0; n < alloc.nodes_size(); ++n) CheckNodeGpus(alloc, a, n, lines_.Child(ref, f_.nodes, n));
  }

  void CheckNodeGpus(const v1::Allocation& alloc, int a, int n, Ref ref) {
    const v1::NodeGpus& ng = alloc.nodes(n);
    const KnownNode* known = Find(ref, f_.node, ng.node(), [&] { return Who(alloc, a); });
    if (known == nullptr) return;
    if (!nodes_seen_.insert(known->index).second) {
      Report(lines_.FieldLine(ref, f_.node), absl::StrCat(Who(alloc, a), ": node '", ng.node(), "' is listed twice"));
      return;
    }
    if (ng.gpus_size() == 0) {
      Report(lines_.Line(ref), absl::StrCat(Who(alloc, a), ": lists no GPUs for node '", ng.node(), "'"));
    }
    own_.clear();
    for (int g = 0; g < ng.gpus_size(); ++g) {
      uint32_t gpu = ng.gpus(g);
      int line = lines_.ItemLine(ref, f_.gpus, g);
      if (static_cast<int64_t>(gpu) >= known->gpus) {
        CheckIndex(line, gpu, known->gpus, ng.node(), Who(alloc, a));
        continue;
      }
      if (!own_.insert(gpu).second) {
        Report(line, absl::StrCat(Who(alloc, a), ": GPU ", gpu, " of node '", ng.node(), "' is listed twice"));
        continue;
      }
      auto [it, inserted] = gpu_owner_.try_emplace(uint64_t{known->index} << 32 | gpu, a);
      if (!inserted) {
        Report(line, absl::StrCat(Who(alloc, a), ": GPU ", gpu, " of node '", ng.node(), "' is already allocated to '",
                                  s_.allocations(it->second).id(), "' (line ", AllocationLine(it->second), ")"));
      }
    }
  }

  int AllocationLine(int a) const { return lines_.Line(lines_.Child(lines_.Root(), f_.allocations, a)); }

  void CheckNodes() {
    absl::flat_hash_map<std::string, int> seen;
    for (int i = 0; i < s_.nodes_size(); ++i) {
      const v1::NodeStatus& status = s_.nodes(i);
      Ref ref = lines_.Child(lines_.Root(), f_.statuses, i);
      std::string who = absl::StrCat("node status nodes[", i, "]");
      const KnownNode* known = Find(ref, f_.status_node, status.node(), [&] { return who; });
      if (known == nullptr) continue;
      if (auto [it, inserted] = seen.try_emplace(status.node(), i); !inserted) {
        Report(lines_.FieldLine(ref, f_.status_node),
               absl::StrCat("node '", status.node(), "' has two status entries (first on line ",
                            lines_.Line(lines_.Child(lines_.Root(), f_.statuses, it->second)), ")"));
      }
      if (!v1::NodeHealth_IsValid(status.health())) {
        Report(lines_.FieldLine(ref, f_.health),
               absl::StrCat(who, ": unknown health value ", static_cast<int>(status.health())));
      }
      for (int g = 0; g < status.failed_gpus_size(); ++g) {
        CheckIndex(lines_.ItemLine(ref, f_.failed_gpus, g), status.failed_gpus(g), known->gpus, status.node(), who);
      }
    }
  }

  // How the messages about one such list name it, e.g. {"caps", "cap override", "name", "rack or power domain",
  // "power_cap_kw", "is overridden twice"}: the list's key, what an entry is, its name's key, what names it may
  // use, its kW key, and what a repeated name is.
  struct NamedKwWords {
    const char *key, *entry, *name_key, *names, *kw_key, *twice;
  };
  static constexpr NamedKwWords kCapWords{"caps",         "cap override",       "name", "rack or power domain",
                                          "power_cap_kw", "is overridden twice"};
  static constexpr NamedKwWords kMeasuredWords{"measured", "measured draw", "rack",
                                               "rack",     "measured_kw",   "is listed twice"};

  // A list of {name, kW} entries (cap overrides, measured draws): each names one of `known`, once, with a kW
  // figure that `check` accepts.
  struct NamedKwList {
    const NamedKwWords* words;
    int list_field, name_field, kw_field;  // LineTable indices of the list and of its entries' two fields
    const absl::flat_hash_set<std::string>* known;
    absl::Status (*check)(double);
  };

  void CheckNamedKw(const NamedKwList& list, int size,
                    absl::FunctionRef<std::pair<const std::string&, double>(int)> entry_at) {
    const NamedKwWords& words = *list.words;
    absl::flat_hash_map<std::string, int> seen;
    for (int i = 0; i < size; ++i) {
      const auto [name, kw] = entry_at(i);
      Ref ref = lines_.Child(lines_.Root(), list.list_field, i);
      const int name_line = lines_.FieldLine(ref, list.name_field);
      if (name.empty()) {
        if (!lines_.Rejected(ref, list.name_field)) {
          Report(lines_.Line(ref),
                 absl::StrCat(words.key, "[", i, "]: missing '", words.name_key, "' (a ", words.names, ")"));
        }
      } else if (!list.known->contains(name)) {
        Report(name_line, absl::StrCat(words.entry, ": unknown ", words.names, " '", name, "'"));
      } else if (auto [it, inserted] = seen.try_emplace(name, i); !inserted) {
        Report(name_line, absl::StrCat(words.entry, ": '", name, "' ", words.twice, " (first on line ",
                                       lines_.Line(lines_.Child(lines_.Root(), list.list_field, it->second)), ")"));
      }
      const int kw_line = lines_.FieldLine(ref, list.kw_field);
      if (!lines_.Has(ref, list.kw_field)) {
        Report(lines_.Line(ref), absl::StrCat(words.entry, " '", name, "': missing '", words.kw_key, "'"));
      } else if (!std::isfinite(kw) || kw < 0) {
        Report(kw_line, absl::StrCat(words.entry, " '", name, "': ", words.kw_key,
                                     " must be a finite number, not negative, got ", kw));
      } else if (absl::Status bad = list.check(kw); !bad.ok()) {
        Report(kw_line, absl::StrCat(words.entry, " '", name, "': ", bad.message()));
      }
    }
  }

  void CheckCaps() {
    CheckNamedKw({&kCapWords, f_.caps, f_.cap_name, f_.cap_kw, &cap_names_, &CheckCapKw}, s_.caps_size(),
                 [&](int i) -> std::pair<const std::string&, double> {
                   return {s_.caps(i).name(), s_.caps(i).power_cap_kw()};
                 });
  }

  void CheckMeasured() {
    CheckNamedKw({&kMeasuredWords, f_.measured, f_.reading_rack, f_.reading_kw, &rack_names_, &CheckMeasuredKw},
                 s_.measured_size(), [&](int i) -> std::pair<const std::string&, double> {
                   return {s_.measured(i).rack(), s_.measured(i).measured_kw()};
                 });
    if (absl::Status bad = CheckReclaimPct(s_.measured_reclaim_pct()); !bad.ok())
      Report(lines_.FieldLine(lines_.Root(), f_.reclaim), absl::StrCat("measured_reclaim_pct ", bad.message()));
  }

  // Each entry: an id, once; both watts within the bounds, the counted below the declared.
  void CheckOversubscribed() {
    absl::flat_hash_set<std::string_view> seen;
    for (int i = 0; i < s_.oversubscribed_size(); ++i) {
      const v1::OversubscribedAllocation& o = s_.oversubscribed(i);
      const Ref ref = lines_.Child(lines_.Root(), f_.oversubscribed, i);
      const std::string who = absl::StrCat("oversubscribed[", i, "]", o.id().empty() ? "" : " '" + o.id() + "'");
      if (o.id().empty()) {
        if (!lines_.Rejected(ref, f_.over_id)) Report(lines_.Line(ref), absl::StrCat(who, ": missing 'id'"));
      } else if (!seen.insert(o.id()).second) {
        Report(lines_.FieldLine(ref, f_.over_id), absl::StrCat(who, ": listed twice"));
      }
      const std::pair<int, double> watts[] = {{f_.over_declared, o.declared_watts_per_gpu()},
                                              {f_.over_counted, o.counted_watts_per_gpu()}};
      const char* keys[] = {"declared_watts_per_gpu", "counted_watts_per_gpu"};
      bool ok = true;
      for (int k = 0; k < 2; ++k) {
        absl::Status bad = !std::isfinite(watts[k].second) || watts[k].second <= 0
                               ? absl::InvalidArgumentError("must be a number above 0")
                               : CheckWattsPerGpu(watts[k].second);
        if (bad.ok()) continue;
        ok = false;
        Report(lines_.FieldLine(ref, watts[k].first),
               absl::StrCat(who, ": ", keys[k], " ", bad.message(), ", got ", watts[k].second));
      }
      if (ok && o.counted_watts_per_gpu() >= o.declared_watts_per_gpu()) {
        Report(lines_.FieldLine(ref, f_.over_counted),
               absl::StrCat(who, ": counted_watts_per_gpu ", o.counted_watts_per_gpu(),
                            " must be below declared_watts_per_gpu ", o.declared_watts_per_gpu()));
      }
    }
  }

  const v1::ClusterState& s_;
  const LineTable& lines_;
  std::string_view file_;
  Diagnostics* out_;
  const Fields f_;
  absl::flat_hash_map<std::string, KnownNode> nodes_;
  absl::flat_hash_set<std::string> rack_names_, cap_names_;
  absl::flat_hash_map<std::string_view, int> ids_;  // id -> allocation index (views into s_)
  absl::flat_hash_map<uint64_t, int> gpu_owner_;    // node index << 32 | GPU -> allocation index
  absl::flat_hash_set<uint32_t> nodes_seen_, own_;  // of the allocation / node being checked
};

}  // namespace

bool CheckState(const v1::ClusterState& state, const v1::ClusterDescription& description, const LineTable& lines,
                std::string_view file, Diagnostics* diagnostics) {
  return StateChecker(state, description, lines, file, diagnostics).Run();
}

}  // namespace rackwise
