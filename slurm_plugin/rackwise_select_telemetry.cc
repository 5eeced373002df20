// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: measured power. Polling runs in SlurmTelemetry's own thread with
// tight timeouts; here, under the plugin's mutex and at the next decision, the parked readings are applied to
// the live ledger (so pending reasons name measured watts through the core's refusal detail) and every change
// is logged once with Slurm's logger. on_overdraw in this face: every action raises the alarm (an error line
// naming the rack and its job ids) and the rack takes nothing more; lower_limits and requeue_newest are logged
// with what they would do but not carried out by slurmctld (see docs/telemetry.md).
#include "absl/strings/match.h"
#include "rackwise/cluster_description.h"
#include "rackwise_select.h"  // after the C++ headers: it ends with Slurm's (macro-heavy) headers

namespace rackwise::slurm {

void RackwiseSelect::ConfigureTelemetryLocked(const std::string& yaml, const std::string& path) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, path, &diagnostics);
  // The model was just built from this text, so it parses; a failure here only means no telemetry.
  const TelemetrySettings settings = d.ok() ? TelemetrySettings::FromDescription(*d) : TelemetrySettings{};
  telemetry_.Reset();
  if (std::string line = telemetry_.Configure(settings); !line.empty()) info("rackwise: %s", line.c_str());
}

void RackwiseSelect::ApplyTelemetryLocked() {
  if (!model_) return;
  for (const std::string& line : telemetry_.ApplyLatest(&model_->ledger())) {
    if (absl::StartsWith(line, "OVERDRAW")) {
      error("rackwise: %s", line.c_str());
    } else {
      info("rackwise: %s", line.c_str());
    }
  }
}

}  // namespace rackwise::slurm
