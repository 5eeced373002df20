// See rackwise/power_view.h.
#include "rackwise/power_view.h"

#include <algorithm>
#include <bit>
#include <set>

namespace rackwise {
namespace {

// Jobs and used GPUs per rack.
struct RackUse {
  std::set<std::string> jobs;
  int used_gpus = 0;
};

class PowerViewBuilder {
 public:
  explicit PowerViewBuilder(const Ledger& ledger)
      : ledger_(ledger), t_(ledger.topology()), reserve_(t_.policy().power_reserve_fraction), use_(t_.racks().size()) {
    for (const Allocation* a : ledger.Allocations()) {
      for (const NodeGpus& n : a->nodes) {
        RackUse& u = use_[t_.nodes()[n.node].rack];
        u.jobs.insert(a->id);
        u.used_gpus += GpuCount(n.gpus);
      }
    }
  }

  std::vector<PowerViewRow> Build() {
    const auto domains = static_cast<PowerDomainId>(t_.power_domains().size());
    for (PowerDomainId d = 0; d < domains; ++d) {
      if (t_.power_domains()[d].parent == kNoId) Visit(d);
    }
    for (RackId r = 0; r < static_cast<RackId>(t_.racks().size()); ++r) {
      if (t_.racks()[r].power_domain == kNoId) AddRack(r);
    }
    return std::move(rows_);
  }

 private:
  void Visit(PowerDomainId d) {
    const PowerDomain& pd = t_.power_domains()[d];
    PowerViewRow row{.kind = PowerViewRow::Kind::kPowerDomain,
                     .name = pd.name,
                     .parent = pd.parent == kNoId ? "" : t_.power_domains()[pd.parent].name,
                     .draw = ledger_.power_domain_draw(d),
                     .counted = ledger_.counted_power_domain_draw(d),
                     .cap = ledger_.power_domain_cap(d),
                     .usable_cap = UsableCap(ledger_.power_domain_cap(d), reserve_),
                     .headroom = ledger_.PowerDomainRoom(d, reserve_)};
    std::set<std::string> jobs;
    for (RackId r = 0; r < static_cast<RackId>(t_.racks().size()); ++r) {
      const std::vector<PowerDomainId>& chain = t_.racks()[r].power_chain;
      if (std::find(chain.begin(), chain.end(), d) == chain.end()) continue;
      jobs.insert(use_[r].jobs.begin(), use_[r].jobs.end());
      row.used_gpus += use_[r].used_gpus;
      row.gpus += RackGpus(r);
    }
    row.jobs = static_cast<int>(jobs.size());
    rows_.push_back(std::move(row));
    for (PowerDomainId child = 0; child < static_cast<PowerDomainId>(t_.power_domains().size()); ++child) {
      if (t_.power_domains()[child].parent == d) Visit(child);
    }
    for (RackId r : pd.racks) AddRack(r);
  }

  void AddRack(RackId r) {
    const Rack& rack = t_.racks()[r];
    rows_.push_back({.kind = PowerViewRow::Kind::kRack,
                     .name = rack.name,
                     .parent = rack.power_domain == kNoId ? "" : t_.power_domains()[rack.power_domain].name,
                     .draw = ledger_.rack_draw(r),
                     .counted = ledger_.counted_rack_draw(r),
                     .measured = ledger_.measured_rack_draw_now(r),
                     .cap = ledger_.rack_cap(r),
                     .usable_cap = UsableCap(ledger_.rack_cap(r), reserve_),
                     .headroom = ledger_.RackHeadroom(r, reserve_),
                     .jobs = static_cast<int>(use_[r].jobs.size()),
                     .used_gpus = use_[r].used_gpus,
                     .gpus = RackGpus(r)});
  }

  int RackGpus(RackId r) const {
    int gpus = 0;
    for (NodeId n : t_.racks()[r].nodes) gpus += t_.nodes()[n].gpus;
    return gpus;
  }

  const Ledger& ledger_;
  const Topology& t_;
  const double reserve_;
  std::vector<RackUse> use_;
  std::vector<PowerViewRow> rows_;
};

}  // namespace

std::vector<PowerViewRow> BuildPowerView(const Ledger& ledger) { return PowerViewBuilder(ledger).Build(); }

}  // namespace rackwise
