// SPDX-License-Identifier: GPL-2.0-or-later
// See slurm_ledger_face.h.
#include "slurm_ledger_face.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ledger_link.h"
#include "rackwise/ledger_owner.h"

namespace rackwise::slurm {
namespace {

// The ids of AdmitLocked's probes (never committed, but never an owner either).
constexpr std::string_view kProbePrefix = "probe/";

// A bounded wait for the plugin's mutex, so that a stopping face never waits on a busy slurmctld for long.
constexpr std::chrono::milliseconds kLockSlice{100};

}  // namespace

absl::StatusOr<std::string> SlurmOwnerPrefix(absl::string_view cluster_name) {
  std::string prefix = absl::StrCat("slurm/", cluster_name, "/");
  // A prefix may have several segments, a Slurm owner exactly three: both are checked, with a job id.
  absl::Status s = ledger::CheckOwnerPrefix(prefix);
  if (s.ok()) s = ledger::ParseOwner(prefix + "1").status();
  if (!s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("ClusterName '", cluster_name, "' cannot name the shared ledger's owners: ", s.message()));
  return prefix;
}

void UnconfirmedReservations::Confirm(uint32_t job_id) { std::erase(pending_, job_id); }

std::vector<uint32_t> UnconfirmedReservations::TakeStale(uint32_t current,
                                                         const std::function<bool(uint32_t)>& started) {
  std::vector<uint32_t> stale, keep;
  for (uint32_t id : pending_) {
    if (id != current && !started(id)) {
      stale.push_back(id);
    } else if (id == current) {
      keep.push_back(id);  // tried again: its old reservation is replaced by this try's
    }
  }
  pending_ = std::move(keep);
  return stale;
}

absl::StatusOr<std::unique_ptr<SlurmLedgerFace>> SlurmLedgerFace::Create(const Topology& topology,
                                                                         const v1::ClusterDescription& description,
                                                                         absl::string_view cluster_name,
                                                                         std::timed_mutex* mu, Ledger* local,
                                                                         Options options, Log log) {
  absl::StatusOr<std::string> prefix = SlurmOwnerPrefix(cluster_name);
  if (!prefix.ok()) return prefix.status();
  bool has_share = false;
  for (const auto& share : description.ledger().shares()) has_share |= share.owner_prefix() == *prefix;
  if (!has_share && log)
    log(true, absl::StrCat("the description's ledger: section gives ", *prefix,
                           " no static_share: while the ledger is unreachable, no new GPU job starts"));
  std::unique_ptr<SlurmLedgerFace> face(new SlurmLedgerFace(*prefix, mu, local, std::move(options), log));
  absl::StatusOr<std::unique_ptr<ledger::LedgerLink>> link =
      ledger::LedgerLink::Create(topology, description, *prefix, [log](const std::string& line) {
        if (log) log(line.find("unreachable") != std::string::npos, line);
      });
  if (!link.ok()) return link.status();
  face->link_ = *std::move(link);
  face->thread_ =
      std::make_unique<PeriodicThread>([f = face.get()] { return f->Beat(); }, PeriodicThread::FirstBeat::kAtOnce);
  return face;
}

SlurmLedgerFace::SlurmLedgerFace(std::string prefix, std::timed_mutex* mu, Ledger* local, Options options, Log log)
    : prefix_(std::move(prefix)), mu_(mu), local_(local), options_(std::move(options)), log_(std::move(log)) {}

SlurmLedgerFace::~SlurmLedgerFace() {
  stopping_ = true;
  thread_.reset();  // joined before anything it uses goes
}

absl::Status SlurmLedgerFace::Reserve(const Allocation& allocation) {
  absl::Status s = link_->ReserveAndCommit(*local_, prefix_ + allocation.id, allocation);
  if (s.ok()) return s;
  // The link says "power ledger"; a Slurm user reads it beside Slurm's own reasons: say which one.
  return absl::Status(s.code(), absl::StrReplaceAll(s.message(), {{"power ledger", "shared power ledger"}}));
}

void SlurmLedgerFace::Release(const std::string& local_id) {
  if (!local_->Find(local_id)) return;  // never held here: nothing of ours in the shared ledger either
  link_->Release(*local_, prefix_ + local_id, local_id);
}

bool SlurmLedgerFace::IsMirrored(absl::string_view id) const { return link_->IsMirrored(id); }

void SlurmLedgerFace::ReconcileSoon() {
  reconcile_due_ = true;
  list_ready_ = true;
  if (thread_) thread_->Wake();
}

std::string SlurmLedgerFace::ReasonNote() const {
  if (in_fallback())
    return absl::StrCat(" (shared power ledger unreachable: deciding within ", prefix_, "'s guaranteed slice; ",
                        link_->last_error(), ")");
  return absl::StrCat(" (shared power ledger: ", link_->mirrored_count(),
                      " allocations of other owners counted, their unused guaranteed slices kept free)");
}

bool SlurmLedgerFace::in_fallback() const { return link_->in_fallback(); }

uint64_t SlurmLedgerFace::fallbacks() const { return link_->fallbacks(); }

void SlurmLedgerFace::SyncLocked() {
  if (!list_ready_) return;
  std::vector<ledger::OwnAllocation> own;
  for (const Allocation* a : local_->Allocations()) {
    if (link_->IsMirrored(a->id) || a->id.starts_with(kProbePrefix)) continue;
    own.push_back({prefix_ + a->id, *a});
  }
  // A failed sync leaves the link in fallback, whose return reconciles the whole list anyway.
  (void)link_->Sync(*local_, own, reconcile_due_);
  reconcile_due_ = false;
}

std::chrono::milliseconds SlurmLedgerFace::Beat() {
  const auto next = [this] { return in_fallback() ? options_.fallback_interval : options_.shared_interval; };
  // In fallback, find out without the plugin's lock whether the ledger answers: slurmctld's decisions wait on
  // that lock, and an unreachable (black-holed) ledger may take the whole deadline to say so.
  if (in_fallback()) {
    if (absl::Status probe = link_->Probe(); !probe.ok()) {
      // Never reached since the start: the link has not said so (its Sync was not tried); say it once.
      if (!unreachable_logged_ && fallbacks() == 0 && log_) {
        log_(true, absl::StrCat("power ledger unreachable since the start: deciding within ", prefix_,
                                "'s guaranteed slice until it answers (", probe.message(), ")"));
      }
      unreachable_logged_ = true;
      WriteMetrics();
      return next();
    }
  }
  bool locked = false;
  while (!stopping_ && !(locked = mu_->try_lock_for(kLockSlice))) {
  }
  if (!locked) return next();  // stopping
  SyncLocked();
  mu_->unlock();
  WriteMetrics();
  return next();
}

void SlurmLedgerFace::WriteMetrics() {
  if (options_.metrics_path.empty()) return;
  std::string text = ledger::BookingMetricsText(*link_);
  if (text == metrics_written_) return;
  const std::string tmp = options_.metrics_path + ".new";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      if (log_) log_(true, absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
      return;
    }
  }
  if (std::rename(tmp.c_str(), options_.metrics_path.c_str()) != 0) {
    if (log_) log_(true, absl::StrCat("cannot write ", options_.metrics_path, ": ", std::strerror(errno)));
    return;
  }
  metrics_written_ = std::move(text);
}

}  // namespace rackwise::slurm
