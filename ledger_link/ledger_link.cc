// See ledger_link.h.
#include "ledger_link.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ledger_shares.h"
#include "ledger_tls.h"
#include "prometheus_text.h"
#include "rackwise/cluster_state.h"
#include "rackwise/ledger_link_defaults.h"
#include "rackwise/ledger_owner.h"
#include "rackwise/start_guard.h"

namespace rackwise::ledger {
namespace {

// Errors the ledger gives as its answer (a refusal, a bad request) rather than for being out of reach.
bool IsAnswer(const absl::Status& s) {
  return s.code() != absl::StatusCode::kUnavailable && s.code() != absl::StatusCode::kDeadlineExceeded;
}

std::vector<std::string> Replicas(const std::string& url) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(url, ',', absl::SkipWhitespace()))
    out.emplace_back(absl::StripAsciiWhitespace(a));
  return out;
}

}  // namespace

const char* LinkModeName(LinkMode mode) { return mode == LinkMode::kShared ? "shared" : "fallback"; }

absl::Status BookOrCommit(LedgerBooking* booking, Ledger& local, const std::string& owner,
                          const Allocation& allocation) {
  if (booking == nullptr) return local.Commit(allocation);
  return booking->ReserveAndCommit(local, owner, allocation);
}

void ReleaseBooked(LedgerBooking* booking, Ledger& local, const std::string& owner, const std::string& local_id) {
  if (booking == nullptr) {
    local.Release(local_id);
  } else {
    booking->Release(local, owner, local_id);
  }
}

std::string BookingMetricsText(const LedgerBooking& booking) {
  std::string out;
  daemon::Gauge(&out, "rackwise_ledger_fallback",
                "1 while the shared power ledger is unreachable (decisions within the guaranteed slice), else 0.");
  absl::StrAppend(&out, "rackwise_ledger_fallback ", booking.in_fallback() ? 1 : 0, "\n");
  daemon::Counter(&out, "rackwise_ledger_fallbacks_total", "Times the shared power ledger became unreachable.");
  absl::StrAppend(&out, "rackwise_ledger_fallbacks_total ", booking.fallbacks(), "\n");
  return out;
}

absl::StatusOr<std::unique_ptr<LedgerLink>> LedgerLink::Create(const Topology& topology,
                                                               const v1::ClusterDescription& description,
                                                               std::string owner_prefix, Log log) {
  if (!description.has_ledger()) return absl::InvalidArgumentError("the description has no ledger: section");
  if (absl::Status s = CheckOwnerPrefix(owner_prefix); !s.ok()) return s;
  absl::StatusOr<GuaranteedSlices> slices = SlicesOfDescription(topology, description);
  if (!slices.ok()) return slices.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LedgerChannelCredentials(description.ledger().tls());
  if (!credentials.ok()) return credentials.status();
  std::string token;
  if (!description.ledger().token_file().empty()) {
    absl::StatusOr<std::string> read = ReadTokenFile(description.ledger().token_file(), "ledger token_file");
    if (!read.ok()) return read.status();
    token = *std::move(read);
  }
  const uint32_t deadline_ms =
      description.ledger().deadline_ms() ? description.ledger().deadline_ms() : kDefaultLedgerDeadlineMs;
  auto client = std::make_unique<LedgerClient>(Replicas(description.ledger().url()),
                                               std::chrono::milliseconds(deadline_ms), *credentials, token);
  auto probe_client = std::make_unique<LedgerClient>(Replicas(description.ledger().url()),
                                                     std::chrono::milliseconds(deadline_ms), *credentials, token);
  return std::unique_ptr<LedgerLink>(new LedgerLink(topology, std::move(owner_prefix), *std::move(slices),
                                                    std::move(client), std::move(probe_client), std::move(log)));
}

LedgerLink::LedgerLink(const Topology& topology, std::string owner_prefix, GuaranteedSlices slices,
                       std::unique_ptr<LedgerClient> client, std::unique_ptr<LedgerClient> probe_client, Log log)
    : topology_(&topology),
      owner_prefix_(std::move(owner_prefix)),
      empty_slices_(std::move(slices)),
      share_(empty_slices_.ShareOfPrefix(owner_prefix_)),
      client_(std::move(client)),
      probe_client_(std::move(probe_client)),
      log_(std::move(log)) {}

absl::Status LedgerLink::Probe() {
  std::lock_guard<std::mutex> lock(probe_mu_);
  absl::StatusOr<std::vector<v1::Allocation>> own = probe_client_->List(owner_prefix_);
  if (own.ok()) return absl::OkStatus();
  // A refusal is an answer: the ledger is there (Sync will say what it refuses).
  return IsAnswer(own.status()) ? absl::OkStatus() : own.status();
}

std::string LedgerLink::last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void LedgerLink::SetError(std::string error) {
  std::lock_guard<std::mutex> lock(error_mu_);
  last_error_ = std::move(error);
}

void LedgerLink::SetCaps(Ledger& local, const ShareCaps& caps) {
  for (RackId r = 0; r < static_cast<RackId>(caps.rack.size()); ++r) local.SetRackCap(r, caps.rack[r]);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(caps.power_domain.size()); ++p)
    local.SetPowerDomainCap(p, caps.power_domain[p]);
  caps_set_ = true;
}

void LedgerLink::DropMirror(Ledger& local) {
  for (const std::string& id : mirrored_) local.Release(id);
  mirrored_.clear();
}

void LedgerLink::EnterFallback(Ledger& local, const absl::Status& why) {
  const bool entering = mode_.exchange(LinkMode::kFallback) == LinkMode::kShared;
  // A face whose ledger was never reached starts in fallback without a change of mode: its operator is told
  // once all the same (the count is of changes only).
  const bool never_reached = !caps_set_;
  SetError(std::string(why.message()));
  DropMirror(local);
  SetCaps(local, empty_slices_.FallbackCaps(share_));
  if (!entering && !never_reached) return;
  if (entering) fallbacks_.fetch_add(1);
  if (log_)
    log_(absl::StrCat("power ledger unreachable (", why.message(), "): fallback to ", owner_prefix_,
                      "'s guaranteed slice of every budget until it answers"));
}

void LedgerLink::Mirror(Ledger& local, absl::Span<const v1::Allocation> held) {
  DropMirror(local);
  GuaranteedSlices counted = empty_slices_;
  for (const v1::Allocation& proto : held) {
    absl::StatusOr<Allocation> a = AllocationFromProto(*topology_, proto);
    if (!a.ok()) continue;  // a node this face's description lacks: the ledger's own description differs
    counted.Add(local, *a);
    if (a->id.starts_with(owner_prefix_)) continue;  // the face's own: held locally under its own ids
    if (local.Commit(*a, CommitMode::kRecover).ok()) mirrored_.insert(a->id);
  }
  SetCaps(local, counted.ConnectedCaps(share_));
}

absl::Status LedgerLink::ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& allocation) {
  if (!owner.starts_with(owner_prefix_))
    return absl::InvalidArgumentError(absl::StrCat("owner '", owner, "' is not under '", owner_prefix_, "'"));
  if (mode_.load() == LinkMode::kShared) {
    v1::Allocation request = AllocationToProto(*topology_, allocation);
    request.set_id(owner);
    const absl::Status reserved = client_->Reserve(request);
    if (reserved.ok()) {
      // The ledger has said yes. The face's ledger may still disagree (a GPU it holds that the ledger has not
      // heard of yet): then the reservation is given back, so that the ledger never holds what does not run.
      absl::Status committed = local.Commit(allocation, CommitMode::kRecover);
      if (!committed.ok()) Release(local, owner, "");
      return committed;
    }
    if (IsAnswer(reserved))
      return absl::Status(reserved.code(), absl::StrCat("the power ledger refused: ", reserved.message()));
    EnterFallback(local, reserved);
  } else if (!caps_set_) {
    EnterFallback(local, absl::UnavailableError(last_error()));
  }
  if (absl::Status s = CommitWithinUsableCaps(local, allocation); !s.ok())
    return absl::Status(s.code(), absl::StrCat("power ledger unreachable, within ", owner_prefix_,
                                               "'s guaranteed slice: ", s.message()));
  return absl::OkStatus();
}

void LedgerLink::Release(Ledger& local, const std::string& owner, const std::string& local_id) {
  if (!local_id.empty()) local.Release(local_id);
  if (mode_.load() != LinkMode::kShared) return;  // the reconcile on return releases it
  absl::StatusOr<bool> released = client_->Release(owner);
  if (!released.ok() && !IsAnswer(released.status())) EnterFallback(local, released.status());
}

absl::Status LedgerLink::Sync(Ledger& local, absl::Span<const OwnAllocation> own, bool reconcile) {
  const bool returning = mode_.load() == LinkMode::kFallback;
  if (returning || reconcile) {
    std::vector<v1::Allocation> list;
    list.reserve(own.size());
    for (const OwnAllocation& o : own) {
      list.push_back(AllocationToProto(*topology_, o.allocation));
      list.back().set_id(o.owner);
    }
    absl::StatusOr<v1::ReconcileResponse> reconciled = client_->Reconcile(owner_prefix_, list);
    if (!reconciled.ok()) {
      EnterFallback(local, reconciled.status());
      return absl::UnavailableError(last_error());
    }
    if (log_ && returning)
      log_(absl::StrCat("power ledger back: reconciled ", own.size(), " allocations of ", owner_prefix_, " (",
                        reconciled->refused_size(), " refused)"));
  }
  absl::StatusOr<std::vector<v1::Allocation>> held = client_->List("");
  if (!held.ok()) {
    EnterFallback(local, held.status());
    return absl::UnavailableError(last_error());
  }
  Mirror(local, *held);
  mode_.store(LinkMode::kShared);
  SetError("");
  return absl::OkStatus();
}

}  // namespace rackwise::ledger
