// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: the shared power ledger (shared_power_ledger.h).
#include "shared_power_ledger.h"

#include <exception>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugin_files.h"
#include "rackwise/cluster_description.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {
namespace {

constexpr char kMetricsFileName[] = "rackwise_ledger.prom";

}  // namespace

void SharedPowerLedger::Reset() {
  face_.reset();
  unconfirmed_.Clear();
}

void SharedPowerLedger::ConfigureLocked(const std::string& yaml, const std::string& path, ClusterModel* model,
                                        std::timed_mutex* mu) {
  error_.clear();
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, path, &diagnostics);
  if (!d.ok() || !d->has_ledger()) return;  // the model was just built from this text: no ledger: section
  SlurmLedgerFace::Options options;
  options.metrics_path = StateSavePath(kMetricsFileName);
  const std::string cluster = slurm_conf.cluster_name ? slurm_conf.cluster_name : "";
  absl::StatusOr<std::unique_ptr<SlurmLedgerFace>> face;
  try {
    face = SlurmLedgerFace::Create(model->topology(), *d, cluster, mu, &model->ledger(), std::move(options),
                                   [](bool is_error, const std::string& line) {
                                     if (is_error) {
                                       error("rackwise: %s", line.c_str());
                                     } else {
                                       info("rackwise: %s", line.c_str());
                                     }
                                   });
  } catch (const std::exception& e) {  // std::system_error: no thread
    face = absl::InternalError(e.what());
  }
  if (!face.ok()) {
    // Placing on the whole described budget would break the other owners' share of it: hold GPU jobs instead.
    error_ = absl::StrCat("rackwise: cannot use the shared power ledger of ", path, ": ", face.status().message(),
                          " (GPU jobs held; fix it and run scontrol reconfigure)");
    error("%s", error_.c_str());
    return;
  }
  face_ = *std::move(face);
  info("rackwise: shared power ledger %s, owners %s*, deadline %u ms", d->ledger().url().c_str(),
       face_->owner_prefix().c_str(), d->ledger().deadline_ms());
}

bool SharedPowerLedger::ReserveLocked(uint32_t job_id, const Allocation& allocation, std::string* why) {
  absl::Status status = face_->Reserve(allocation);
  if (!status.ok()) {
    *why = std::string(status.message());
    return false;
  }
  unconfirmed_.Add(job_id);
  debug("rackwise: JobId=%u reserved through the shared power ledger (%s)", job_id,
        face_->in_fallback() ? "fallback" : "shared");
  return true;
}

void SharedPowerLedger::SweepUnconfirmedLocked(uint32_t current, Ledger* local) {
  if (unconfirmed_.empty()) return;
  const std::vector<uint32_t> stale = unconfirmed_.TakeStale(current, [](uint32_t id) {
    const job_record_t* job = find_job_record(id);
    return job && (IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job));
  });
  for (uint32_t id : stale) {
    info("rackwise: JobId=%u did not start after its job_test: its shared power ledger reservation is released", id);
    ReleaseLocked(std::to_string(id), local);
  }
}

void SharedPowerLedger::ReleaseLocked(const std::string& id, Ledger* local) {
  if (face_) {
    face_->Release(id);
  } else {
    local->Release(id);
  }
}

}  // namespace rackwise::slurm
