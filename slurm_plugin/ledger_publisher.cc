// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres: publishing the live ledger and the steered GPU limits (ledger_publisher.h).
#include "ledger_publisher.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "plugin_files.h"
#include "published_ledger.h"
#include "rackwise/cluster_state.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {
namespace {

constexpr std::chrono::milliseconds kStateInterval{5000};

}  // namespace

LedgerPublisher::~LedgerPublisher() {
  // The poller calls the wake-up under the telemetry's lock, so none is in flight once the hook is cleared;
  // then the publisher's thread is joined while everything it reads still exists.
  power_->SetOnDelivered(nullptr);
  publisher_.reset();
}

std::chrono::milliseconds LedgerPublisher::IntervalLocked() const {
  const TelemetrySettings& t = power_->telemetry().settings();
  if (!t.enabled) return kStateInterval;
  return std::min<std::chrono::milliseconds>(
      kStateInterval, std::chrono::milliseconds(static_cast<int64_t>(std::max(0.1, t.interval_s) * 1000)));
}

void LedgerPublisher::StartLocked() {
  if (publisher_) {
    publisher_->SetInterval(IntervalLocked());  // telemetry may have been reconfigured
    return;
  }
  const std::string path = StateSavePath(kPublishedLedgerFileName);
  if (path.empty()) return;
  const std::string limits_path = StateSavePath(kSteeredLimitsFileName);
  try {
    publisher_ = std::make_unique<StatePublisher>(
        std::vector<std::string>{path, limits_path}, IntervalLocked(), [this] { return Snapshot(); },
        [](const std::string& why) { error("rackwise: cannot publish the ledger: %s", why.c_str()); });
    StatePublisher* publisher = publisher_.get();  // the destructor clears this hook before it goes
    power_->SetOnDelivered([publisher] { publisher->Wake(); });
    info("rackwise: publishing the ledger to %s and the steered GPU limits to %s every %.1fs", path.c_str(),
         limits_path.c_str(), IntervalLocked().count() / 1000.0);
  } catch (const std::exception& e) {  // std::system_error: no thread; the plugin works without the file
    error("rackwise: not publishing the ledger: %s", e.what());
  }
}

std::vector<std::optional<std::string>> LedgerPublisher::Snapshot() {
  std::unique_lock lock(*mu_, std::try_to_lock);
  if (!lock.owns_lock() || !*model_) return {};
  ClusterModel* model = model_->get();
  // Readings are otherwise applied at the next decision: applying them here too raises an overdraw alarm (and
  // acts on it) within one publishing round even when nothing is pending.
  power_->ApplyLocked(model, *oversubscribed_);
  v1::ClusterState state = PublishedLedger(model->ledger(), *oversubscribed_);
  std::optional<std::string> limits;
  if (std::optional<std::vector<LimitChange>> lowered = power_->telemetry().LimitsToPublish())
    limits = SteeredLimitsToText(steered_book_.Lines(model->ledger(), *lowered));
  lock.unlock();
  return {ClusterStateToYaml(state), std::move(limits)};
}

}  // namespace rackwise::slurm
