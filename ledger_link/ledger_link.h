// A face's link to the shared power ledger (rackwise-ledger), knowing nothing of Slurm or Kubernetes: it keeps
// the face's own core Ledger in one of two modes and reserves through the ledger service.
//
// - Shared: the ledger answers. Every other owner's allocation (List) is mirrored into the face's ledger in
//   record mode, under the ledger's owner ids, so that local choices see their draw; the face's caps are the
//   described ones less the other owners' unused guaranteed slices (GuaranteedSlices::ConnectedCaps), so that
//   what the face picks is what the ledger admits. Reserve goes to the ledger before the work starts.
// - Fallback: the ledger did not answer within the deadline. The mirror is dropped and the face's caps become
//   its own guaranteed slice (GuaranteedSlices::FallbackCaps): the face adds work only while its own draw stays
//   within the slice, which is safe whatever the other faces do (docs/design.md). Sync tries the ledger again;
//   when it answers, the face's whole own list is reconciled (releases made meanwhile, work added meanwhile),
//   then the mirror is rebuilt and the mode is shared again.
//
// The face's own allocations live in its ledger under its own ids ("pod/ns/name"); it names their ledger owner
// ("k8s/<namespace>/<uid>", under the link's owner prefix) on every call.
// Not thread-safe: call it under the lock that guards the face's ledger. Every call returns within the
// description's deadline_ms (Sync within two, its reconcile and list), so a face never stalls on the ledger.
// mode(), last_error() and fallbacks() may be read from any thread (for reasons, logs and metrics).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ledger_booking.h"
#include "ledger_client.h"
#include "rackwise/guaranteed_slices.h"
#include "rackwise/ledger.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::ledger {

enum class LinkMode {
  kShared,    // the ledger answers: reserve through it, others' allocations mirrored
  kFallback,  // it did not: local decisions within the face's guaranteed slice, until Sync reaches it again
};
const char* LinkModeName(LinkMode mode);  // "shared", "fallback"

class LedgerLink final : public LedgerBooking {
 public:
  using Log = std::function<void(const std::string&)>;

  // `description` must have a `ledger:` section; `owner_prefix` is the face's own ("k8s/", "slurm/<cluster>/").
  // `topology` (built from `description`) must outlive the link. The link starts in fallback until the first
  // Sync reaches the ledger. InvalidArgument for a bad prefix or shares; TLS files that cannot be read too.
  static absl::StatusOr<std::unique_ptr<LedgerLink>> Create(const Topology& topology,
                                                            const v1::ClusterDescription& description,
                                                            std::string owner_prefix, Log log = nullptr);

  // Reserves `allocation` for `owner` and commits it to `local`:
  // - shared: the ledger's Reserve, then the local commit (record mode: the ledger has said yes);
  //   FailedPrecondition with the ledger's reason when it refuses, `local` unchanged; when `local` refuses what
  //   the ledger took (a GPU the face holds that the ledger has not heard of), the ledger's is released again;
  // - the ledger unreachable (or already in fallback): switches to fallback and commits within the face's
  //   slice (CommitWithinUsableCaps), or FailedPrecondition saying the fallback slice is full.
  absl::Status ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& allocation) override;
  // Releases `local_id` (if not empty) from `local` and, in shared mode, `owner` from the ledger (an unreachable ledger
  // switches to fallback: the reconcile on return releases it there).
  void Release(Ledger& local, const std::string& owner, const std::string& local_id) override;
  // Shared: re-mirrors the other owners. Fallback: tries the ledger; when it answers, reconciles `own` (the
  // face's whole list under its prefix), re-mirrors and turns shared. Returns the mode's reason when in fallback.
  // `reconcile`: reconciles `own` in shared mode too (the face rebuilt its list, e.g. a relist of its pods).
  absl::Status Sync(Ledger& local, absl::Span<const OwnAllocation> own, bool reconcile) override;

  // Whether the ledger's leader answers now (a List of the face's own prefix), through a client of the probe's own:
  // callable from any thread without the lock that guards the face's ledger. A face in fallback probes before it
  // takes that lock for Sync, so that an unreachable ledger costs its decisions no wait at all (a black-holed
  // address would otherwise hold the lock for the whole deadline on every retry).
  absl::Status Probe();

  LinkMode mode() const { return mode_.load(); }
  bool in_fallback() const override { return mode() == LinkMode::kFallback; }
  std::string fallback_reason() const override { return last_error(); }
  // Why the link is in fallback (the last failed call), empty in shared mode.
  std::string last_error() const;
  // How many times the link entered fallback.
  uint64_t fallbacks() const override { return fallbacks_.load(); }
  // Whether `id` in the face's ledger is another owner's allocation mirrored there now, and how many are.
  bool IsMirrored(absl::string_view id) const { return mirrored_.contains(id); }
  size_t mirrored_count() const { return mirrored_.size(); }

 private:
  LedgerLink(const Topology& topology, std::string owner_prefix, GuaranteedSlices slices,
             std::unique_ptr<LedgerClient> client, std::unique_ptr<LedgerClient> probe_client, Log log);
  // Drops the mirror, sets the fallback caps, records why.
  void EnterFallback(Ledger& local, const absl::Status& why);
  // Replaces the mirror with `held` (every owner's, from List) and sets the connected caps.
  void Mirror(Ledger& local, absl::Span<const v1::Allocation> held);
  void DropMirror(Ledger& local);
  void SetCaps(Ledger& local, const ShareCaps& caps);
  void SetError(std::string error);

  const Topology* topology_;
  const std::string owner_prefix_;
  const GuaranteedSlices empty_slices_;  // nothing held: the start of every recount
  const int share_;                      // the face's share in empty_slices_
  std::unique_ptr<LedgerClient> client_;
  std::mutex probe_mu_;  // guards probe_client_ (a client is not thread-safe)
  std::unique_ptr<LedgerClient> probe_client_;
  Log log_;
  std::atomic<LinkMode> mode_{LinkMode::kFallback};
  std::atomic<uint64_t> fallbacks_{0};
  mutable std::mutex error_mu_;
  std::string last_error_ = "not yet synchronised with the ledger";
  absl::flat_hash_set<std::string> mirrored_;  // ids of the other owners' allocations in the face's ledger
  bool caps_set_ = false;                      // whether `local` has had this link's caps once
};

}  // namespace rackwise::ledger
