// Guaranteed slices: how a shared power ledger lets owners (Slurm, Kubernetes) borrow each other's idle power
// and still let an owner cut off from the ledger run safely on a static share.
//
// Every owner prefix o has a share K_o (sum <= 1) of every budget B (a rack's or power domain's usable cap less
// its idle draw, static_share.h): its slice s_o(B) = floor(K_o x B). held_o(B) is what o's allocations draw
// above idle there. The ledger admits a new allocation of owner A only if, for every budget it touches, after it
//     sum over owners o of max(held_o(B), s_o(B)) <= B,
// so every other owner's unused slice stays free. An owner cut off from the ledger adds work only while its own
// held stays within its slice (FallbackCaps). Then whatever runs stays within B: a connected owner runs at most
// what the ledger holds for it; a cut-off one at most max(what the ledger still holds for it, its slice); the
// sum of those is what the rule keeps under B. Proof and trade-off: docs/design.md, "The shared power ledger
// service". Owners that match no share (and the owners of a description without shares) have a slice of 0.
//
// Pure: no I/O, no clock. Not thread-safe (as Ledger): its user serialises access.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/allocation.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"

namespace rackwise {

struct OwnerShare {
  std::string owner_prefix;  // "slurm/<cluster>/", "k8s/": every owner starting with it
  double static_share = 0;   // 0..1 of every budget
};

// Caps for a face's local ledger, one per rack and per power domain (topology order).
struct ShareCaps {
  std::vector<Milliwatts> rack, power_domain;
};

class GuaranteedSlices {
 public:
  // The index of the owners that match no share.
  int unshared() const { return static_cast<int>(shares_.size()); }

  // Checks the shares (each in [0, 1], sum <= 1, prefixes non-empty, none a prefix of another: InvalidArgument)
  // and works out every slice from the described caps. `topology` must outlive the result.
  static absl::StatusOr<GuaranteedSlices> Create(const Topology& topology, std::vector<OwnerShare> shares);

  // The share `owner` (an allocation id) falls under; unshared() when none.
  int ShareOf(std::string_view owner) const;
  // The share whose prefix is exactly `owner_prefix` (a face's own); unshared() when none.
  int ShareOfPrefix(std::string_view owner_prefix) const;
  const std::vector<OwnerShare>& shares() const { return shares_; }

  // Counts (Add) or stops counting (Remove) an allocation held in `ledger` under its owner's share. Draws are
  // the ledger's (Ledger::PerGpu). Rebuild starts again from every allocation of `ledger`.
  void Add(const Ledger& ledger, const Allocation& allocation);
  void Remove(const Ledger& ledger, const Allocation& allocation);
  void Rebuild(const Ledger& ledger);

  // OK when the rule above holds, after adding `allocation`, at every rack and power domain it touches;
  // FailedPrecondition naming the first that would not, with the budget and the other owners' unused slices.
  absl::Status Admit(const Ledger& ledger, const Allocation& allocation) const;

  // Caps under which share `share` adds only while its own draw stays within its slice, for a face's ledger
  // that holds its own allocations alone (the other owners' mirror dropped): a face cut off from the ledger.
  ShareCaps FallbackCaps(int share) const;
  // Caps under which share `share`'s ledger, holding every owner's allocations as counted here, admits what
  // the rule admits: each usable cap less the other owners' unused slices. For a connected face's local choices.
  ShareCaps ConnectedCaps(int share) const;

  // Figures of one budget (racks first, then power domains: index = rack, or racks + power domain).
  Milliwatts budget(int b) const { return budget_[b]; }
  Milliwatts slice(int share, int b) const { return slice_[Index(share, b)]; }
  Milliwatts held(int share, int b) const { return held_[Index(share, b)]; }
  int budget_count() const { return static_cast<int>(budget_.size()); }

 private:
  GuaranteedSlices(const Topology& topology, std::vector<OwnerShare> shares);
  size_t Index(int share, int b) const { return static_cast<size_t>(share) * budget_.size() + b; }
  // What `allocation` adds above idle at each budget it touches, as (budget, draw), each budget once.
  std::vector<std::pair<int, Milliwatts>> DrawByBudget(const Ledger& ledger, const Allocation& allocation) const;
  // The sum over owners of max(held, slice) at budget `b`, with `extra` added to share `share`'s held.
  Milliwatts Committed(int b, int share, Milliwatts extra) const;
  // What the owners other than `share` leave of their slices unused at budget `b`.
  Milliwatts OthersUnused(int b, int share) const;
  std::string BudgetName(int b) const;
  Milliwatts CapOf(int b) const;
  Milliwatts IdleOf(int b) const;

  const Topology* topology_;
  std::vector<OwnerShare> shares_;
  double reserve_ = 0;
  std::vector<Milliwatts> budget_;
  std::vector<Milliwatts> slice_, held_;  // [share * budgets + budget], the unshared owners last (slice 0)
};

}  // namespace rackwise
