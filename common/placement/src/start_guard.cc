// See start_guard.h.
#include "rackwise/start_guard.h"

#include <bit>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// The first rack or power domain touched by `allocation` (not committed) whose draw with the allocation's
// watts added would be above its usable cap; OK if none. Read-only: nothing is committed to find out.
absl::Status UsableCapsHeld(const Ledger& ledger, const Allocation& allocation) {
  const Topology& t = ledger.topology();
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<Milliwatts> rack_add(t.racks().size(), 0), pd_add(t.power_domains().size(), 0);
  std::vector<char> rack_seen(t.racks().size(), 0), pd_seen(t.power_domains().size(), 0);
  for (const NodeGpus& ng : allocation.nodes) {
    const RackId r = t.nodes()[ng.node].rack;
    const Milliwatts watts = std::popcount(ng.gpus) * ledger.PerGpu(allocation, ng.node);
    rack_add[r] += watts;
    for (PowerDomainId p : t.racks()[r].power_chain) pd_add[p] += watts;
  }
  auto reserve_text = [&] { return absl::StrFormat("%g", reserve * 100); };
  for (const NodeGpus& ng : allocation.nodes) {
    const RackId r = t.nodes()[ng.node].rack;
    if (rack_seen[r]) continue;
    rack_seen[r] = 1;
    if (ledger.RackRoom(r, reserve) < rack_add[r]) {
      return absl::FailedPreconditionError(absl::StrCat(
          "allocation ", allocation.id, ": rack ", t.racks()[r].name, " would draw ",
          Kw(ledger.rack_draw(r) + rack_add[r]), ", usable cap ", Kw(UsableCap(ledger.rack_cap(r), reserve)), " (cap ",
          Kw(ledger.rack_cap(r)), " less the ", reserve_text(), "% reserve)"));
    }
    for (PowerDomainId p : t.racks()[r].power_chain) {
      if (pd_seen[p]) continue;
      pd_seen[p] = 1;
      if (ledger.PowerDomainRoom(p, reserve) < pd_add[p]) {
        return absl::FailedPreconditionError(
            absl::StrCat("allocation ", allocation.id, ": power domain ", t.power_domains()[p].name, " would draw ",
                         Kw(ledger.power_domain_draw(p) + pd_add[p]), ", usable cap ",
                         Kw(UsableCap(ledger.power_domain_cap(p), reserve)), " (cap ", Kw(ledger.power_domain_cap(p)),
                         " less the ", reserve_text(), "% reserve)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CommitWithinUsableCaps(Ledger& ledger, const Allocation& allocation) {
  if (const Allocation* held = ledger.Find(allocation.id); held && *held == allocation) return absl::OkStatus();
  if (absl::Status s = CheckWithinUsableCaps(ledger, allocation); !s.ok()) return s;
  return ledger.Commit(allocation, CommitMode::kEnforce);
}

absl::Status CheckWithinUsableCaps(const Ledger& ledger, const Allocation& allocation) {
  if (ledger.Find(allocation.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("allocation ", allocation.id, " is already held"));
  }
  if (absl::Status s = ledger.Check(allocation, CommitMode::kEnforce); !s.ok()) return s;
  return UsableCapsHeld(ledger, allocation);
}

}  // namespace rackwise
