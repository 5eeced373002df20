// See shared_ledger.h.
#include "shared_ledger.h"

#include <bit>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rackwise/cluster_state.h"
#include "rackwise/start_guard.h"

namespace rackwise::ledger {
namespace {

int64_t ToNs(SharedLedger::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The store's bytes as an allocation of this cluster, checked against the key it was stored under.
absl::StatusOr<Allocation> DecodeStored(const Topology& topology, const StoredAllocation& stored) {
  v1::Allocation proto;
  if (!proto.ParseFromString(stored.value))
    return absl::DataLossError(absl::StrCat("stored allocation of '", stored.owner, "' is not a v1.Allocation"));
  if (proto.id() != stored.owner)
    return absl::DataLossError(
        absl::StrCat("allocation stored under '", stored.owner, "' names owner '", proto.id(), "'"));
  return AllocationFromProto(topology, proto);
}

// Bad requests are refused whole: an owner outside the prefix or listed twice is a face's bug, not a refusal.
absl::Status CheckReconcileList(absl::string_view owner_prefix, absl::Span<const v1::Allocation> allocations) {
  if (absl::Status s = CheckOwnerPrefix(owner_prefix); !s.ok()) return s;
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(allocations.size());
  for (const v1::Allocation& a : allocations) {
    if (absl::StatusOr<OwnerKind> kind = ParseOwner(a.id()); !kind.ok()) return kind.status();
    if (!absl::StartsWith(a.id(), owner_prefix))
      return absl::InvalidArgumentError(absl::StrCat("owner '", a.id(), "' is not under prefix '", owner_prefix, "'"));
    if (!seen.insert(a.id()).second)
      return absl::InvalidArgumentError(absl::StrCat("owner '", a.id(), "' is listed twice"));
  }
  return absl::OkStatus();
}

}  // namespace

SharedLedger::SharedLedger(const Topology* topology, LedgerStore* store)
    : SharedLedger(topology, store, *GuaranteedSlices::Create(*topology, {})) {}  // no shares: cannot fail

SharedLedger::SharedLedger(const Topology* topology, LedgerStore* store, GuaranteedSlices slices)
    : topology_(topology), store_(store), slices_(std::move(slices)) {}

absl::Status SharedLedger::TakeOver(Clock::time_point lease_deadline) {
  absl::StatusOr<std::vector<StoredAllocation>> stored = store_->LoadAll();
  if (!stored.ok()) return stored.status();
  auto fresh = std::make_unique<Ledger>(*topology_);
  for (const StoredAllocation& s : *stored) {
    absl::StatusOr<Allocation> a = DecodeStored(*topology_, s);
    if (!a.ok()) return a.status();
    if (absl::Status c = fresh->Commit(*a, CommitMode::kRecover); !c.ok())
      return absl::Status(c.code(), absl::StrCat("stored allocation '", s.owner, "': ", c.message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ledger_ = std::move(fresh);
  slices_.Rebuild(*ledger_);
  lease_deadline_ns_.store(ToNs(lease_deadline));
  return absl::OkStatus();
}

void SharedLedger::ExtendLease(Clock::time_point lease_deadline) {
  if (lease_deadline_ns_.load() != 0) lease_deadline_ns_.store(ToNs(lease_deadline));
}

void SharedLedger::StopServing() { lease_deadline_ns_.store(0); }

bool SharedLedger::serving() const {
  const int64_t deadline = lease_deadline_ns_.load();
  return deadline != 0 && ToNs(Clock::now()) < deadline;
}

absl::Status SharedLedger::CheckServingLocked() const {
  if (ledger_ == nullptr || !serving())
    // Unavailable, not a refusal: the client tries the next replica (another may lead by now), and a face that
    // finds no leader falls back; taken as an answer, a Release here would be dropped and its owner leak.
    return absl::UnavailableError("not the leader (or its lease is no longer known to be live)");
  return absl::OkStatus();
}

std::string SharedLedger::Serialise(const Allocation& allocation) const {
  return AllocationToProto(*topology_, allocation).SerializeAsString();
}

absl::Status SharedLedger::Reserve(const v1::Allocation& request) {
  if (absl::StatusOr<OwnerKind> kind = ParseOwner(request.id()); !kind.ok()) return kind.status();
  absl::StatusOr<Allocation> allocation = AllocationFromProto(*topology_, request);
  if (!allocation.ok()) return allocation.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckServingLocked(); !s.ok()) return s;
  if (const Allocation* held = ledger_->Find(allocation->id)) {
    if (*held == *allocation) return absl::OkStatus();
    return absl::AlreadyExistsError(
        absl::StrCat("owner '", allocation->id, "' already holds a different allocation; release it first"));
  }
  if (absl::Status s = CheckWithinUsableCaps(*ledger_, *allocation); !s.ok()) return s;
  if (absl::Status s = slices_.Admit(*ledger_, *allocation); !s.ok()) return s;
  const StoreWrite write{allocation->id, Serialise(*allocation)};
  if (absl::Status s = store_->Write({&write, 1}); !s.ok()) return s;
  // Cannot fail: checked above under the same lock.
  if (absl::Status s = ledger_->Commit(*allocation); !s.ok()) return s;
  slices_.Add(*ledger_, *allocation);
  return absl::OkStatus();
}

absl::StatusOr<bool> SharedLedger::Release(absl::string_view owner) {
  if (absl::StatusOr<OwnerKind> kind = ParseOwner(owner); !kind.ok()) return kind.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckServingLocked(); !s.ok()) return s;
  const std::string id(owner);
  const Allocation* held = ledger_->Find(id);
  if (held == nullptr) return false;
  const StoreWrite write{id, std::nullopt};
  if (absl::Status s = store_->Write({&write, 1}); !s.ok()) return s;
  slices_.Remove(*ledger_, *held);
  return ledger_->Release(id);
}

absl::StatusOr<ReconcileOutcome> SharedLedger::Reconcile(absl::string_view owner_prefix,
                                                         absl::Span<const v1::Allocation> allocations) {
  if (absl::Status s = CheckReconcileList(owner_prefix, allocations); !s.ok()) return s;
  ReconcileOutcome outcome;
  std::vector<Allocation> listed;
  listed.reserve(allocations.size());
  for (const v1::Allocation& a : allocations) {
    absl::StatusOr<Allocation> converted = AllocationFromProto(*topology_, a);
    if (converted.ok()) {
      listed.push_back(std::move(*converted));
    } else {
      outcome.refused.push_back(absl::StrCat(a.id(), ": ", converted.status().message()));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckServingLocked(); !s.ok()) return s;
  absl::StatusOr<ReconcileOutcome> done =
      ReconcileLocked(owner_prefix, allocations, std::move(listed), std::move(outcome));
  // Batches may have been applied and undone on the way: recount what each owner holds from the ledger.
  slices_.Rebuild(*ledger_);
  return done;
}

absl::StatusOr<ReconcileOutcome> SharedLedger::ReconcileLocked(absl::string_view owner_prefix,
                                                               absl::Span<const v1::Allocation> allocations,
                                                               std::vector<Allocation> listed,
                                                               ReconcileOutcome outcome) {
  absl::flat_hash_set<absl::string_view> listed_owners;
  listed_owners.reserve(allocations.size());
  for (const v1::Allocation& a : allocations) listed_owners.insert(a.id());
  std::vector<std::string> releases;
  for (const Allocation* held : ledger_->Allocations()) {
    if (absl::StartsWith(held->id, owner_prefix) && !listed_owners.contains(held->id)) releases.push_back(held->id);
  }
  std::vector<Allocation> upserts;
  for (Allocation& a : listed) {
    const Allocation* held = ledger_->Find(a.id);
    if (held != nullptr && *held == a) {
      ++outcome.unchanged;
    } else {
      upserts.push_back(std::move(a));
    }
  }
  // Releases first, so that work that moved within the list finds its new GPUs and power free.
  if (absl::Status s = WriteReleases(releases); !s.ok()) return s;
  outcome.released = static_cast<uint32_t>(releases.size());
  if (absl::Status s = WriteUpserts(upserts, &outcome); !s.ok()) return s;
  return outcome;
}

absl::Status SharedLedger::WriteReleases(absl::Span<const std::string> owners) {
  const size_t batch = store_->max_writes_per_call();
  for (size_t begin = 0; begin < owners.size(); begin += batch) {
    std::vector<StoreWrite> writes;
    for (size_t i = begin; i < owners.size() && i < begin + batch; ++i) writes.push_back({owners[i], std::nullopt});
    if (absl::Status s = store_->Write(writes); !s.ok()) return s;
    for (const StoreWrite& w : writes) ledger_->Release(w.owner);
  }
  return absl::OkStatus();
}

absl::Status SharedLedger::WriteUpserts(absl::Span<const Allocation> upserts, ReconcileOutcome* outcome) {
  // Each batch is applied in memory first (recover mode: listed work runs already), so that refusals are known
  // before the write; if the write fails, the batch is undone in reverse order.
  struct Applied {
    std::string owner;
    std::optional<Allocation> previous;
  };
  const size_t batch = store_->max_writes_per_call();
  size_t next = 0;
  while (next < upserts.size()) {
    std::vector<StoreWrite> writes;
    std::vector<Applied> applied;
    for (; next < upserts.size() && writes.size() < batch; ++next) {
      const Allocation& a = upserts[next];
      std::optional<Allocation> previous;
      if (const Allocation* held = ledger_->Find(a.id)) previous = *held;
      if (absl::Status s = ledger_->Replace(a, CommitMode::kRecover); !s.ok()) {
        outcome->refused.push_back(absl::StrCat(a.id, ": ", s.message()));
        continue;
      }
      writes.push_back({a.id, Serialise(a)});
      applied.push_back({a.id, std::move(previous)});
    }
    if (absl::Status s = store_->Write(writes); !s.ok()) {
      for (auto it = applied.rbegin(); it != applied.rend(); ++it) {
        ledger_->Release(it->owner);
        if (it->previous) (void)ledger_->Commit(*it->previous, CommitMode::kRecover);
      }
      return s;
    }
    for (const Applied& a : applied) ++(a.previous ? outcome->replaced : outcome->added);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Allocation>> SharedLedger::List(absl::string_view owner_prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckServingLocked(); !s.ok()) return s;
  std::vector<v1::Allocation> out;
  for (const Allocation* a : ledger_->Allocations()) {
    if (absl::StartsWith(a->id, owner_prefix)) out.push_back(AllocationToProto(*topology_, *a));
  }
  return out;
}

size_t SharedLedger::allocation_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_ == nullptr ? 0 : ledger_->allocation_count();
}

std::vector<RackDrawByOwner> SharedLedger::DrawByOwner() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RackDrawByOwner> out(topology_->racks().size());
  for (RackId r = 0; r < static_cast<RackId>(out.size()); ++r) {
    out[r].rack = topology_->racks()[r].name;
    out[r].cap = ledger_ ? ledger_->rack_cap(r) : topology_->racks()[r].cap;
    out[r].idle = topology_->racks()[r].idle;
  }
  if (ledger_ == nullptr) return out;
  for (const Allocation* a : ledger_->Allocations()) {
    const OwnerKind kind = KindOfOwner(a->id);
    for (const NodeGpus& ng : a->nodes) {
      RackDrawByOwner& rack = out[topology_->nodes()[ng.node].rack];
      const Milliwatts draw = ledger_->PerGpu(*a, ng.node) * std::popcount(ng.gpus);
      (kind == OwnerKind::kSlurm ? rack.slurm : kind == OwnerKind::kK8s ? rack.k8s : rack.other) += draw;
    }
  }
  return out;
}

}  // namespace rackwise::ledger
