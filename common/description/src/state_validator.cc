// The rules of a state file; see state_validator.h. Negative test files live in tests/data/invalid_state/.
#include "state_validator.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "description_validator.h"
#include "rackwise/power_bounds.h"

namespace rackwise {
namespace {

class StateChecker {
 public:
  StateChecker(const v1::ClusterState& s, const v1::ClusterDescription& d, const SourceLines& lines,
               std::string_view file, Diagnostics* out)
      : s_(s), lines_(lines), file_(file), out_(out) {
    for (const DescribedNode& n : DescribedNodes(d)) node_gpus_.try_emplace(n.name, n.gpus);
    for (const v1::Rack& r : d.racks()) cap_names_.insert(r.name());
    for (const v1::PowerDomain& pd : d.power_domains()) cap_names_.insert(pd.name());
  }

  bool Run() {
    size_t before = out_->size();
    CheckAllocations();
    CheckNodes();
    CheckCaps();
    return out_->size() == before;
  }

 private:
  void Report(const std::string& path, std::string message) {
    out_->push_back({std::string(file_), lines_.Line(path), std::move(message)});
  }

  // GPUs of a described node, or -1 (after reporting) when the description has no such node.
  int GpusOf(const std::string& path, const std::string& node, const std::string& who) {
    if (node.empty()) {
      if (!lines_.Rejected(path + ".node")) Report(path, absl::StrCat(who, ": missing 'node'"));
      return -1;
    }
    auto it = node_gpus_.find(node);
    if (it == node_gpus_.end()) {
      Report(path + ".node", absl::StrCat(who, ": unknown node '", node, "' (not in any rack of the description)"));
      return -1;
    }
    return it->second;
  }

  bool CheckIndex(const std::string& path, uint32_t gpu, int gpus, const std::string& node, const std::string& who) {
    if (static_cast<int64_t>(gpu) < gpus) return true;
    Report(path, absl::StrCat(who, ": GPU index ", gpu, " is out of range for node '", node, "' (", gpus, " GPUs: 0..",
                              gpus - 1, ")"));
    return false;
  }

  void CheckAllocations() {
    absl::flat_hash_map<std::string, int> ids;                             // id -> allocation index
    absl::flat_hash_map<std::pair<std::string, uint32_t>, int> gpu_owner;  // (node, gpu) -> allocation index
    for (int a = 0; a < s_.allocations_size(); ++a) {
      const v1::Allocation& alloc = s_.allocations(a);
      std::string p = absl::StrCat("allocations[", a, "]");
      std::string who = alloc.id().empty() ? p : absl::StrCat("allocation '", alloc.id(), "'");
      if (alloc.id().empty()) {
        if (!lines_.Rejected(p + ".id")) Report(p, absl::StrCat(p, ": missing 'id'"));
      } else if (auto [it, inserted] = ids.try_emplace(alloc.id(), a); !inserted) {
        Report(p + ".id", absl::StrCat("duplicate allocation id '", alloc.id(), "' (first on line ",
                                       lines_.Line(absl::StrCat("allocations[", it->second, "]")), ")"));
      }
      if (!std::isfinite(alloc.watts_per_gpu()) || alloc.watts_per_gpu() < 0) {
        Report(p + ".watts_per_gpu",
               absl::StrCat(who, ": watts_per_gpu must be a finite number, not negative, got ", alloc.watts_per_gpu()));
      } else if (absl::Status bad = CheckWattsPerGpu(alloc.watts_per_gpu()); !bad.ok()) {
        Report(p + ".watts_per_gpu", absl::StrCat(who, ": ", bad.message()));
      }
      if (alloc.nodes_size() == 0) Report(p, absl::StrCat(who, ": no nodes"));
      absl::flat_hash_set<std::string> nodes_seen;
      for (int n = 0; n < alloc.nodes_size(); ++n) {
        const v1::NodeGpus& ng = alloc.nodes(n);
        std::string np = absl::StrCat(p, ".nodes[", n, "]");
        int gpus = GpusOf(np, ng.node(), who);
        if (gpus < 0) continue;
        if (!nodes_seen.insert(ng.node()).second) {
          Report(np + ".node", absl::StrCat(who, ": node '", ng.node(), "' is listed twice"));
          continue;
        }
        if (ng.gpus_size() == 0) Report(np, absl::StrCat(who, ": lists no GPUs for node '", ng.node(), "'"));
        absl::flat_hash_set<uint32_t> own;
        for (int g = 0; g < ng.gpus_size(); ++g) {
          uint32_t gpu = ng.gpus(g);
          std::string gp = absl::StrCat(np, ".gpus[", g, "]");
          if (!CheckIndex(gp, gpu, gpus, ng.node(), who)) continue;
          if (!own.insert(gpu).second) {
            Report(gp, absl::StrCat(who, ": GPU ", gpu, " of node '", ng.node(), "' is listed twice"));
            continue;
          }
          auto [it, inserted] = gpu_owner.try_emplace(std::make_pair(ng.node(), gpu), a);
          if (!inserted) {
            const v1::Allocation& owner = s_.allocations(it->second);
            Report(gp,
                   absl::StrCat(who, ": GPU ", gpu, " of node '", ng.node(), "' is already allocated to '", owner.id(),
                                "' (line ", lines_.Line(absl::StrCat("allocations[", it->second, "]")), ")"));
          }
        }
      }
    }
  }

  void CheckNodes() {
    absl::flat_hash_map<std::string, int> seen;
    for (int i = 0; i < s_.nodes_size(); ++i) {
      const v1::NodeStatus& status = s_.nodes(i);
      std::string p = absl::StrCat("nodes[", i, "]");
      std::string who = absl::StrCat("node status ", p);
      int gpus = GpusOf(p, status.node(), who);
      if (gpus < 0) continue;
      if (auto [it, inserted] = seen.try_emplace(status.node(), i); !inserted) {
        Report(p + ".node", absl::StrCat("node '", status.node(), "' has two status entries (first on line ",
                                         lines_.Line(absl::StrCat("nodes[", it->second, "]")), ")"));
      }
      if (!v1::NodeHealth_IsValid(status.health())) {
        Report(p + ".health", absl::StrCat(who, ": unknown health value ", static_cast<int>(status.health())));
      }
      for (int g = 0; g < status.failed_gpus_size(); ++g) {
        CheckIndex(absl::StrCat(p, ".failed_gpus[", g, "]"), status.failed_gpus(g), gpus, status.node(), who);
      }
    }
  }

  void CheckCaps() {
    absl::flat_hash_map<std::string, int> seen;
    for (int i = 0; i < s_.caps_size(); ++i) {
      const v1::CapOverride& cap = s_.caps(i);
      std::string p = absl::StrCat("caps[", i, "]");
      if (cap.name().empty()) {
        if (!lines_.Rejected(p + ".name")) Report(p, absl::StrCat(p, ": missing 'name' (a rack or power domain)"));
      } else if (!cap_names_.contains(cap.name())) {
        Report(p + ".name", absl::StrCat("cap override: unknown rack or power domain '", cap.name(), "'"));
      } else if (auto [it, inserted] = seen.try_emplace(cap.name(), i); !inserted) {
        Report(p + ".name", absl::StrCat("cap override: '", cap.name(), "' is overridden twice (first on line ",
                                         lines_.Line(absl::StrCat("caps[", it->second, "]")), ")"));
      }
      if (!lines_.empty() && !lines_.Has(p + ".power_cap_kw")) {
        Report(p, absl::StrCat("cap override '", cap.name(), "': missing 'power_cap_kw'"));
      } else if (!std::isfinite(cap.power_cap_kw()) || cap.power_cap_kw() < 0) {
        Report(p + ".power_cap_kw",
               absl::StrCat("cap override '", cap.name(), "': power_cap_kw must be a finite number, not negative, got ",
                            cap.power_cap_kw()));
      } else if (absl::Status bad = CheckCapKw(cap.power_cap_kw()); !bad.ok()) {
        Report(p + ".power_cap_kw", absl::StrCat("cap override '", cap.name(), "': ", bad.message()));
      }
    }
  }

  const v1::ClusterState& s_;
  const SourceLines& lines_;
  std::string_view file_;
  Diagnostics* out_;
  absl::flat_hash_map<std::string, int> node_gpus_;
  absl::flat_hash_set<std::string> cap_names_;
};

}  // namespace

bool CheckState(const v1::ClusterState& state, const v1::ClusterDescription& description, const SourceLines& lines,
                std::string_view file, Diagnostics* diagnostics) {
  return StateChecker(state, description, lines, file, diagnostics).Run();
}

}  // namespace rackwise
