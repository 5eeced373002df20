// See start_guard.h.
#include "rackwise/start_guard.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// The first rack or power domain touched by `allocation` whose draw (the allocation included) is above its
// usable cap; OK if none.
absl::Status UsableCapsHeld(const Ledger& ledger, const Allocation& allocation) {
  const Topology& t = ledger.topology();
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<char> rack_seen(t.racks().size(), 0), pd_seen(t.power_domains().size(), 0);
  for (const NodeGpus& ng : allocation.nodes) {
    const RackId r = t.nodes()[ng.node].rack;
    if (rack_seen[r]) continue;
    rack_seen[r] = 1;
    if (ledger.RackRoom(r, reserve) < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "allocation ", allocation.id, ": rack ", t.racks()[r].name, " would draw ", Kw(ledger.rack_draw(r)),
          ", usable cap ", Kw(UsableCap(ledger.rack_cap(r), reserve)), " (cap ", Kw(ledger.rack_cap(r)),
          " less the ", absl::StrFormat("%g", reserve * 100), "% reserve)"));
    }
    for (PowerDomainId p : t.racks()[r].power_chain) {
      if (pd_seen[p]) continue;
      pd_seen[p] = 1;
      if (ledger.PowerDomainRoom(p, reserve) < 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "allocation ", allocation.id, ": power domain ", t.power_domains()[p].name, " would draw ",
            Kw(ledger.power_domain_draw(p)), ", usable cap ", Kw(UsableCap(ledger.power_domain_cap(p), reserve)),
            " (cap ", Kw(ledger.power_domain_cap(p)), " less the ", absl::StrFormat("%g", reserve * 100),
            "% reserve)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CommitWithinUsableCaps(Ledger& ledger, const Allocation& allocation) {
  if (const Allocation* held = ledger.Find(allocation.id); held && *held == allocation) return absl::OkStatus();
  if (absl::Status s = ledger.Commit(allocation, CommitMode::kEnforce); !s.ok()) return s;
  if (absl::Status s = UsableCapsHeld(ledger, allocation); !s.ok()) {
    ledger.Release(allocation.id);
    return s;
  }
  return absl::OkStatus();
}

absl::Status CheckWithinUsableCaps(Ledger& ledger, const Allocation& allocation) {
  if (ledger.Find(allocation.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("allocation ", allocation.id, " is already held"));
  }
  absl::Status s = CommitWithinUsableCaps(ledger, allocation);
  if (s.ok()) ledger.Release(allocation.id);
  return s;
}

}  // namespace rackwise
