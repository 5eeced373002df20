// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: the shared power ledger when rackwise.yaml has a
// `ledger:` section. Owners are "slurm/<ClusterName>/<jobid>". A job's GPUs are reserved through the ledger in
// job_test (RUN_NOW), once cons_tres has picked what Slurm will run, and released at job end; a reservation whose
// job slurmctld then did not start is given back at the next job_test. After every rebuild of the plugin's ledger
// from job_list (start, restart, reconfigure) the face reconciles the whole slurm/<ClusterName>/ list with the
// ledger, and again on the ledger's return after a fallback (slurm_ledger_face.h). Round trips on the decision
// path: one Reserve per started job and one Release per ended job while the ledger answers; none in fallback.
#include "absl/strings/str_cat.h"
#include "plugin_files.h"
#include "rackwise/cluster_description.h"
#include "rackwise_select.h"  // after the C++ headers: it ends with Slurm's (macro-heavy) headers
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr char kMetricsFileName[] = "rackwise_ledger.prom";

}  // namespace

void RackwiseSelect::ConfigureSharedLedgerLocked(const std::string& yaml, const std::string& path) {
  ledger_error_.clear();
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, path, &diagnostics);
  if (!d.ok() || !d->has_ledger()) return;  // the model was just built from this text: no ledger: section
  SlurmLedgerFace::Options options;
  options.metrics_path = StateSavePath(kMetricsFileName);
  const std::string cluster = slurm_conf.cluster_name ? slurm_conf.cluster_name : "";
  absl::StatusOr<std::unique_ptr<SlurmLedgerFace>> face;
  try {
    face = SlurmLedgerFace::Create(model_->topology(), *d, cluster, &mu_, &model_->ledger(), std::move(options),
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
    ledger_error_ = absl::StrCat("rackwise: cannot use the shared power ledger of ", path, ": ",
                                 face.status().message(), " (GPU jobs held; fix it and run scontrol reconfigure)");
    error("%s", ledger_error_.c_str());
    return;
  }
  shared_ = *std::move(face);
  info("rackwise: shared power ledger %s, owners %s*, deadline %u ms", d->ledger().url().c_str(),
       shared_->owner_prefix().c_str(), d->ledger().deadline_ms());
}

bool RackwiseSelect::ReserveSharedLocked(const job_record_t* job, const bitstr_t* nodes, std::string* why) {
  if (!shared_) return true;
  std::optional<Allocation> allocation = SelectedGpus(job, nodes, *model_, gpu_plugin_id_);
  if (!allocation) return true;  // no GPUs on described nodes: nothing to reserve
  CountAsPlacedLocked(&*allocation);
  absl::Status status = shared_->Reserve(*allocation);
  if (!status.ok()) {
    *why = std::string(status.message());
    return false;
  }
  unconfirmed_.Add(job->job_id);
  debug("rackwise: JobId=%u reserved through the shared power ledger (%s)", job->job_id,
        shared_->in_fallback() ? "fallback" : "shared");
  return true;
}

void RackwiseSelect::SweepUnconfirmedLocked(uint32_t current) {
  if (unconfirmed_.empty()) return;
  const std::vector<uint32_t> stale = unconfirmed_.TakeStale(current, [](uint32_t id) {
    const job_record_t* job = find_job_record(id);
    return job && (IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job));
  });
  for (uint32_t id : stale) {
    info("rackwise: JobId=%u did not start after its job_test: its shared power ledger reservation is released", id);
    ReleaseJobLocked(std::to_string(id));
  }
}

void RackwiseSelect::ReleaseJobLocked(const std::string& id) {
  if (shared_) {
    shared_->Release(id);
  } else {
    model_->ledger().Release(id);
  }
}

}  // namespace rackwise::slurm
