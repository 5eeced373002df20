// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres publishes its live ledger to StateSaveLocation/rackwise_state.yaml (every
// kStateInterval, when it changed) for `rackwise status --cluster rackwise.yaml --state ...`, and beside it the
// steered GPU limits (steered_limits.h) for the nodes' `rackwise-slurm-gpu-power follow`. The publisher's own
// thread takes the snapshot with a try-lock: when slurmctld is busy in the plugin it skips a round rather than
// wait, and the YAML and the disk writes happen outside the lock; no slurmctld lock ever waits on a node. With
// telemetry on, the publisher runs at least every telemetry interval and is woken when readings arrive, so that a
// steering decision is on disk a moment after the readings that made it.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "plugin_files.h"
#include "published_ledger.h"
#include "rackwise/cluster_state.h"
#include "rackwise_select.h"
#include "steered_limits.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {

RackwiseSelect::~RackwiseSelect() {
  // The poller calls the wake-up under the telemetry's lock, so none is in flight once the hook is cleared;
  // then the publisher's thread is joined while everything it reads still exists.
  power_.SetOnDelivered(nullptr);
  state_publisher_.reset();
}

namespace {

constexpr std::chrono::milliseconds kStateInterval{5000};

}  // namespace

std::chrono::milliseconds RackwiseSelect::PublishIntervalLocked() const {
  const TelemetrySettings& t = power_.telemetry().settings();
  if (!t.enabled) return kStateInterval;
  return std::min<std::chrono::milliseconds>(
      kStateInterval, std::chrono::milliseconds(static_cast<int64_t>(std::max(0.1, t.interval_s) * 1000)));
}

void RackwiseSelect::StartStatePublisherLocked() {
  if (state_publisher_) {
    state_publisher_->SetInterval(PublishIntervalLocked());  // telemetry may have been reconfigured
    return;
  }
  const std::string path = StateSavePath(kPublishedLedgerFileName);
  if (path.empty()) return;
  const std::string limits_path = StateSavePath(kSteeredLimitsFileName);
  try {
    state_publisher_ = std::make_unique<StatePublisher>(
        std::vector<std::string>{path, limits_path}, PublishIntervalLocked(), [this] { return StateSnapshot(); },
        [](const std::string& why) { error("rackwise: cannot publish the ledger: %s", why.c_str()); });
    StatePublisher* publisher = state_publisher_.get();  // the destructor clears this hook before it goes
    power_.SetOnDelivered([publisher] { publisher->Wake(); });
    info("rackwise: publishing the ledger to %s and the steered GPU limits to %s every %.1fs", path.c_str(),
         limits_path.c_str(), PublishIntervalLocked().count() / 1000.0);
  } catch (const std::exception& e) {  // std::system_error: no thread; the plugin works without the file
    error("rackwise: not publishing the ledger: %s", e.what());
  }
}

void RackwiseSelect::RestoreOversubscribedLocked() {
  if (oversubscribed_restored_ || !model_) return;
  oversubscribed_restored_ = true;
  const std::string path = StateSavePath(kPublishedLedgerFileName);
  if (path.empty()) return;
  absl::StatusOr<OversubscribedAllocations> read = ReadOversubscribedJobs(path, description_.text(), DescriptionPath());
  if (read.status().code() == absl::StatusCode::kNotFound) return;  // the first start
  if (!read.ok()) {
    // The jobs counted oversubscribed before now count what they declared: the safe side, logged.
    error("rackwise: %s: not read back (%s): running jobs count the watts they declared", path.c_str(),
          std::string(read.status().message()).c_str());
    return;
  }
  oversubscribed_ = *std::move(read);
  if (oversubscribed_.size() > 0)
    info("rackwise: %zu jobs counted oversubscribed, read back from %s", oversubscribed_.size(), path.c_str());
}

std::vector<std::optional<std::string>> RackwiseSelect::StateSnapshot() {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !model_) return {};
  // Readings are otherwise applied at the next decision: applying them here too raises an overdraw alarm (and
  // acts on it) within one publishing round even when nothing is pending.
  power_.ApplyLocked(model_.get(), oversubscribed_);
  v1::ClusterState state = PublishedLedger(model_->ledger(), oversubscribed_);
  std::optional<std::string> limits;
  if (std::optional<std::vector<LimitChange>> lowered = power_.telemetry().LimitsToPublish())
    limits = SteeredLimitsToText(steered_book_.Lines(model_->ledger(), *lowered));
  lock.unlock();
  return {ClusterStateToYaml(state), std::move(limits)};
}

}  // namespace rackwise::slurm
