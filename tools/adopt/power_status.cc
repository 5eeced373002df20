// Rows of `rackwise status`; see power_status.h.
#include "power_status.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise::adopt {
namespace {

double Watts(Milliwatts mw) { return static_cast<double>(mw) / 1000.0; }

double UsableCap(Milliwatts cap, double reserve) { return Watts(cap) * (1.0 - reserve); }

// Jobs and used GPUs per rack.
struct RackUse {
  std::set<std::string> jobs;
  int used_gpus = 0;
};

std::vector<RackUse> UseByRack(const Ledger& ledger) {
  const Topology& t = ledger.topology();
  std::vector<RackUse> use(t.racks().size());
  for (const Allocation* a : ledger.Allocations()) {
    for (const NodeGpus& n : a->nodes) {
      RackUse& u = use[t.nodes()[n.node].rack];
      u.jobs.insert(a->id);
      u.used_gpus += std::popcount(n.gpus);
    }
  }
  return use;
}

}  // namespace

PowerStatus StatusFromLedger(const Ledger& ledger) {
  const Topology& t = ledger.topology();
  double reserve = t.policy().power_reserve_fraction;
  std::vector<RackUse> use = UseByRack(ledger);
  PowerStatus status{.cluster = t.cluster_name(), .allocations = static_cast<int>(ledger.allocation_count())};
  auto rack_row = [&](RackId r) {
    const Rack& rack = t.racks()[r];
    int gpus = 0;
    for (NodeId n : rack.nodes) gpus += t.nodes()[n].gpus;
    status.rows.push_back({.kind = "rack",
                           .name = rack.name,
                           .parent = rack.power_domain == kNoId ? "" : t.power_domains()[rack.power_domain].name,
                           .draw_watts = Watts(ledger.rack_draw(r)),
                           .cap_watts = Watts(ledger.rack_cap(r)),
                           .usable_cap_watts = UsableCap(ledger.rack_cap(r), reserve),
                           .headroom_watts = Watts(ledger.RackHeadroom(r, reserve)),
                           .jobs = static_cast<int>(use[r].jobs.size()),
                           .used_gpus = use[r].used_gpus,
                           .gpus = gpus});
  };
  // Depth-first from the roots, in the description's order, so that a domain is followed by its children and
  // its racks.
  const auto domain_count = static_cast<PowerDomainId>(t.power_domains().size());
  std::function<void(PowerDomainId)> visit = [&](PowerDomainId d) {
    const PowerDomain& pd = t.power_domains()[d];
    std::set<std::string> jobs;
    int used = 0, gpus = 0;
    for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
      const auto& chain = t.racks()[r].power_chain;
      if (std::find(chain.begin(), chain.end(), d) == chain.end()) continue;
      jobs.insert(use[r].jobs.begin(), use[r].jobs.end());
      used += use[r].used_gpus;
      for (NodeId n : t.racks()[r].nodes) gpus += t.nodes()[n].gpus;
    }
    status.rows.push_back({.kind = "power_domain",
                           .name = pd.name,
                           .parent = pd.parent == kNoId ? "" : t.power_domains()[pd.parent].name,
                           .draw_watts = Watts(ledger.power_domain_draw(d)),
                           .cap_watts = Watts(ledger.power_domain_cap(d)),
                           .usable_cap_watts = UsableCap(ledger.power_domain_cap(d), reserve),
                           .headroom_watts = Watts(ledger.PowerDomainRoom(d, reserve)),
                           .jobs = static_cast<int>(jobs.size()),
                           .used_gpus = used,
                           .gpus = gpus});
    for (PowerDomainId child = 0; child < domain_count; ++child) {
      if (t.power_domains()[child].parent == d) visit(child);
    }
    for (RackId r : pd.racks) rack_row(r);
  };
  for (PowerDomainId d = 0; d < domain_count; ++d) {
    if (t.power_domains()[d].parent == kNoId) visit(d);
  }
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (t.racks()[r].power_domain == kNoId) rack_row(r);
  }
  return status;
}

PowerStatus StatusFromClusterState(const v1::ClusterStateResponse& state) {
  PowerStatus status{.cluster = state.cluster(), .allocations = static_cast<int>(state.allocations())};
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
  absl::StrAppendFormat(&out, "%-24s %10s %10s %10s %10s %6s %5s %11s\n", "RACK / POWER DOMAIN", "DRAW kW", "CAP kW",
                        "USABLE kW", "HEADROOM", "USE%", "JOBS", "GPUS");
  std::map<std::string, int> depth;
  for (const PowerRow& row : status.rows) {
    int d = row.parent.empty() ? 0 : depth[row.parent] + 1;
    if (row.kind == "power_domain") depth[row.name] = d;
    std::string name = std::string(2 * d, ' ') + row.name + (row.kind == "power_domain" ? "/" : "");
    std::string jobs = row.jobs < 0 ? "-" : absl::StrCat(row.jobs);
    std::string gpus = row.gpus < 0 ? "-" : absl::StrCat(row.used_gpus, "/", row.gpus);
    double use = row.usable_cap_watts > 0 ? 100.0 * row.draw_watts / row.usable_cap_watts : 0;
    absl::StrAppendFormat(&out, "%-24s %10.1f %10.1f %10.1f %10.1f %5.0f%% %5s %11s\n", name, row.draw_watts / 1000,
                          row.cap_watts / 1000, row.usable_cap_watts / 1000, row.headroom_watts / 1000, use, jobs,
                          gpus);
  }
  return out;
}

nlohmann::ordered_json StatusJson(const PowerStatus& status) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const PowerRow& row : status.rows) {
    nlohmann::ordered_json r = {{"kind", row.kind},
                                {"name", row.name},
                                {"parent", row.parent},
                                {"draw_watts", row.draw_watts},
                                {"cap_watts", row.cap_watts},
                                {"usable_cap_watts", row.usable_cap_watts},
                                {"headroom_watts", row.headroom_watts}};
    if (row.jobs >= 0) r["jobs"] = row.jobs;
    if (row.gpus >= 0) {
      r["used_gpus"] = row.used_gpus;
      r["gpus"] = row.gpus;
    }
    rows.push_back(r);
  }
  return {{"cluster", status.cluster}, {"source", status.source}, {"allocations", status.allocations}, {"rows", rows}};
}

}  // namespace rackwise::adopt
