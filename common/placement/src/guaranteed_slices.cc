// See rackwise/guaranteed_slices.h.
#include "rackwise/guaranteed_slices.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rackwise/static_share.h"

namespace rackwise {
namespace {

std::string Watts(Milliwatts mw) { return absl::StrCat(mw / 1000, " W"); }

absl::Status CheckShares(const std::vector<OwnerShare>& shares) {
  double sum = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const OwnerShare& s = shares[i];
    if (s.owner_prefix.empty()) return absl::InvalidArgumentError(absl::StrCat("share ", i, ": empty owner prefix"));
    if (!std::isfinite(s.static_share) || s.static_share < 0 || s.static_share > 1)
      return absl::InvalidArgumentError(
          absl::StrCat("share of '", s.owner_prefix, "': ", s.static_share, " is not between 0 and 1"));
    sum += s.static_share;
    for (size_t j = 0; j < i; ++j) {
      if (absl::StartsWith(s.owner_prefix, shares[j].owner_prefix) ||
          absl::StartsWith(shares[j].owner_prefix, s.owner_prefix))
        return absl::InvalidArgumentError(absl::StrCat("owner prefixes '", shares[j].owner_prefix, "' and '",
                                                       s.owner_prefix, "' overlap: an owner would have two slices"));
    }
  }
  if (sum > 1) return absl::InvalidArgumentError(absl::StrCat("the shares sum to ", sum, "; at most 1"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GuaranteedSlices> GuaranteedSlices::Create(const Topology& topology, std::vector<OwnerShare> shares) {
  if (absl::Status s = CheckShares(shares); !s.ok()) return s;
  return GuaranteedSlices(topology, std::move(shares));
}

GuaranteedSlices::GuaranteedSlices(const Topology& topology, std::vector<OwnerShare> shares)
    : topology_(&topology), shares_(std::move(shares)), reserve_(topology.policy().power_reserve_fraction) {
  const int budgets = static_cast<int>(topology.racks().size() + topology.power_domains().size());
  for (int b = 0; b < budgets; ++b) budget_.push_back(ShareBudget(CapOf(b), IdleOf(b), reserve_));
  slice_.assign((shares_.size() + 1) * budget_.size(), 0);
  held_.assign(slice_.size(), 0);
  for (int b = 0; b < budgets; ++b) {
    // Floors of shares summing to at most 1 fit in the budget; should a double's rounding say otherwise, the
    // last slices give way, so that the rule's starting point (every slice unused, sum <= budget) holds.
    Milliwatts left = budget_[b];
    for (int s = 0; s < static_cast<int>(shares_.size()); ++s) {
      slice_[Index(s, b)] = std::min(left, ShareSlice(budget_[b], shares_[s].static_share));
      left -= slice_[Index(s, b)];
    }
  }
}

Milliwatts GuaranteedSlices::CapOf(int b) const {
  const int racks = static_cast<int>(topology_->racks().size());
  return b < racks ? topology_->racks()[b].cap : topology_->power_domains()[b - racks].cap;
}

Milliwatts GuaranteedSlices::IdleOf(int b) const {
  const int racks = static_cast<int>(topology_->racks().size());
  return b < racks ? topology_->racks()[b].idle : topology_->power_domains()[b - racks].idle;
}

std::string GuaranteedSlices::BudgetName(int b) const {
  const int racks = static_cast<int>(topology_->racks().size());
  return b < racks ? absl::StrCat("rack '", topology_->racks()[b].name, "'")
                   : absl::StrCat("power domain '", topology_->power_domains()[b - racks].name, "'");
}

int GuaranteedSlices::ShareOf(std::string_view owner) const {
  for (int s = 0; s < static_cast<int>(shares_.size()); ++s)
    if (owner.starts_with(shares_[s].owner_prefix)) return s;
  return unshared();
}

int GuaranteedSlices::ShareOfPrefix(std::string_view owner_prefix) const {
  for (int s = 0; s < static_cast<int>(shares_.size()); ++s)
    if (owner_prefix == shares_[s].owner_prefix) return s;
  return unshared();
}

std::vector<std::pair<int, Milliwatts>> GuaranteedSlices::DrawByBudget(const Ledger& ledger,
                                                                       const Allocation& allocation) const {
  const int racks = static_cast<int>(topology_->racks().size());
  std::vector<std::pair<int, Milliwatts>> out;
  for (const NodeGpus& ng : allocation.nodes) {
    const RackId r = topology_->nodes()[ng.node].rack;
    const Milliwatts draw = ledger.PerGpu(allocation, ng.node) * GpuCount(ng.gpus);
    out.emplace_back(r, draw);
    for (PowerDomainId p : topology_->racks()[r].power_chain) out.emplace_back(racks + p, draw);
  }
  std::sort(out.begin(), out.end());
  size_t kept = 0;  // one entry per budget, the draws summed
  for (size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && out[kept - 1].first == out[i].first) {
      out[kept - 1].second += out[i].second;
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
  return out;
}

void GuaranteedSlices::Add(const Ledger& ledger, const Allocation& allocation) {
  const int share = ShareOf(allocation.id);
  for (const auto& [b, draw] : DrawByBudget(ledger, allocation)) held_[Index(share, b)] += draw;
}

void GuaranteedSlices::Remove(const Ledger& ledger, const Allocation& allocation) {
  const int share = ShareOf(allocation.id);
  for (const auto& [b, draw] : DrawByBudget(ledger, allocation)) held_[Index(share, b)] -= draw;
}

void GuaranteedSlices::Rebuild(const Ledger& ledger) {
  std::fill(held_.begin(), held_.end(), 0);
  for (const Allocation* a : ledger.Allocations()) Add(ledger, *a);
}

Milliwatts GuaranteedSlices::Committed(int b, int share, Milliwatts extra) const {
  Milliwatts sum = 0;
  for (int s = 0; s <= unshared(); ++s)
    sum += std::max(held_[Index(s, b)] + (s == share ? extra : 0), slice_[Index(s, b)]);
  return sum;
}

absl::Status GuaranteedSlices::Admit(const Ledger& ledger, const Allocation& allocation) const {
  const int share = ShareOf(allocation.id);
  for (const auto& [b, draw] : DrawByBudget(ledger, allocation)) {
    const Milliwatts committed = Committed(b, share, draw);
    if (committed <= budget_[b]) continue;
    Milliwatts others_held = 0;
    for (int s = 0; s <= unshared(); ++s)
      if (s != share) others_held += held_[Index(s, b)];
    return absl::FailedPreconditionError(absl::StrCat(
        BudgetName(b), ": '", allocation.id, "' needs ", Watts(draw), " above idle; of its budget of ",
        Watts(budget_[b]), " its owner holds ", Watts(held_[Index(share, b)]), ", the other owners hold ",
        Watts(others_held), " and ", Watts(OthersUnused(b, share)), " more is kept free for their guaranteed slices"));
  }
  return absl::OkStatus();
}

Milliwatts GuaranteedSlices::OthersUnused(int b, int share) const {
  Milliwatts unused = 0;
  for (int s = 0; s <= unshared(); ++s)
    if (s != share) unused += std::max<Milliwatts>(0, slice_[Index(s, b)] - held_[Index(s, b)]);
  return unused;
}

ShareCaps GuaranteedSlices::FallbackCaps(int share) const {
  const int racks = static_cast<int>(topology_->racks().size());
  ShareCaps caps;
  for (int b = 0; b < budget_count(); ++b) {
    const Milliwatts cap = CapForUsable(IdleOf(b) + slice_[Index(share, b)], reserve_);
    (b < racks ? caps.rack : caps.power_domain).push_back(cap);
  }
  return caps;
}

ShareCaps GuaranteedSlices::ConnectedCaps(int share) const {
  const int racks = static_cast<int>(topology_->racks().size());
  ShareCaps caps;
  for (int b = 0; b < budget_count(); ++b) {
    const Milliwatts cap = CapForUsable(UsableCap(CapOf(b), reserve_) - OthersUnused(b, share), reserve_);
    (b < racks ? caps.rack : caps.power_domain).push_back(cap);
  }
  return caps;
}

}  // namespace rackwise
