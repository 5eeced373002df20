// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres publishes its live ledger to StateSaveLocation/rackwise_state.yaml (every
// kStateInterval, when it changed) for `rackwise status --cluster rackwise.yaml --state ...`. The publisher's
// own thread takes the snapshot with a try-lock: when slurmctld is busy in the plugin it skips a round rather
// than wait, and the YAML and the disk write happen outside the lock.
#include <chrono>

#include "rackwise/cluster_state.h"
#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr std::chrono::seconds kStateInterval{5};
constexpr char kStateFileName[] = "rackwise_state.yaml";

}  // namespace

void RackwiseSelect::StartStatePublisherLocked() {
  if (slurm_conf.state_save_location == nullptr || *slurm_conf.state_save_location == '\0') return;
  std::string path = std::string(slurm_conf.state_save_location) + "/" + kStateFileName;
  try {
    state_publisher_ = std::make_unique<StatePublisher>(
        path, kStateInterval, [this] { return StateSnapshot(); },
        [](const std::string& why) { error("rackwise: cannot publish the ledger: %s", why.c_str()); });
    info("rackwise: publishing the ledger to %s every %llds", path.c_str(),
         static_cast<long long>(kStateInterval.count()));
  } catch (const std::exception& e) {  // std::system_error: no thread; the plugin works without the file
    error("rackwise: not publishing the ledger: %s", e.what());
  }
}

std::optional<std::string> RackwiseSelect::StateSnapshot() {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !model_) return std::nullopt;
  // Readings are otherwise applied at the next decision: applying them here too raises an overdraw alarm (and
  // acts on it) within one publishing round even when nothing is pending.
  ApplyTelemetryLocked();
  v1::ClusterState state = CaptureClusterState(model_->ledger());
  lock.unlock();
  return ClusterStateToYaml(state);
}

}  // namespace rackwise::slurm
