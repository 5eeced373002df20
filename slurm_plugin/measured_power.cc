// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: measured power and the answer to an overdraw (measured_power.h).
#include "measured_power.h"

#include <cerrno>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rackwise/cluster_description.h"
#include "rackwise/telemetry.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

void MeasuredPower::ConfigureLocked(const std::string& yaml, const std::string& path) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, path, &diagnostics);
  // The model was just built from this text, so it parses; a failure here only means no telemetry.
  const TelemetrySettings settings = d.ok() ? TelemetrySettings::FromDescription(*d) : TelemetrySettings{};
  telemetry_.Reset();
  if (std::string line = telemetry_.Configure(settings); !line.empty()) info("rackwise: %s", line.c_str());
}

void MeasuredPower::ApplyLocked(ClusterModel* model, const OversubscribedAllocations& oversubscribed) {
  // Steering raises a job counted oversubscribed back to what it declared, never above.
  SteeringFacts facts;
  oversubscribed.AddDeclaredTo(&facts);
  for (const std::string& line : telemetry_.ApplyLatest(&model->ledger(), facts)) {
    if (absl::StartsWith(line, "OVERDRAW")) {
      error("rackwise: %s", line.c_str());
    } else {
      info("rackwise: %s", line.c_str());
    }
  }
  // Only on a new round: the overdraws of an older one were acted on, and may name jobs requeued since.
  if (telemetry_.applied_round() && telemetry_.settings().on_overdraw == OverdrawAction::kRequeueNewest)
    RequeueForOverdrawLocked(*model);
}

JobRequeuer* MeasuredPower::RequeuerLocked() {
  if (requeuer_) return requeuer_.get();
  try {
    requeuer_ = std::make_unique<JobRequeuer>(
        [](uint32_t job_id) {
          // Through slurmctld's own RPC, from the requeuer's thread (no slurmctld lock held there).
          return slurm_requeue(job_id, 0) == SLURM_SUCCESS ? std::string() : std::string(slurm_strerror(errno));
        },
        [](bool ok, const std::string& line) {
          if (ok) {
            info("rackwise: %s", line.c_str());
          } else {
            error("rackwise: %s", line.c_str());
          }
        });
  } catch (const std::exception& e) {  // std::system_error: no thread; the caller's alarm stands on its own
    error("rackwise: cannot start the requeue thread: %s", e.what());
  }
  return requeuer_.get();
}

void MeasuredPower::RequeueForOverdrawLocked(const ClusterModel& model) {
  const std::vector<Overdraw>& overdraws = telemetry_.tracker().new_overdraws();
  if (overdraws.empty()) return;
  JobRequeuer* requeuer = RequeuerLocked();
  if (!requeuer) return;
  const Topology& topology = model.topology();
  for (const Overdraw& o : overdraws) {
    const std::vector<std::string> ids =
        PlanRequeueNewest(model.ledger(), o, [this](const std::string& id) -> std::optional<int64_t> {
          auto it = started_at_.find(id);
          return it == started_at_.end() ? std::nullopt : std::optional<int64_t>(it->second);
        });
    for (const std::string& id : ids) {
      uint32_t job_id = 0;
      if (!absl::SimpleAtoi(id, &job_id)) continue;
      requeuer->Requeue(job_id, absl::StrCat(OverdrawScope(topology, o), " measures over its cap; newest job there"),
                        "OVERDRAW: requeue_newest");
    }
  }
}

}  // namespace rackwise::slurm
