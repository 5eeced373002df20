// SPDX-License-Identifier: GPL-2.0-or-later
// See slurm_telemetry.h.
#include "slurm_telemetry.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "power_fetch.h"
#include "prometheus_client.h"
#include "telemetry_poller.h"

namespace rackwise::slurm {
namespace {

bool SameSource(const TelemetrySettings& a, const TelemetrySettings& b) {
  return a.enabled == b.enabled && a.prometheus_url == b.prometheus_url && a.node_power_query == b.node_power_query &&
         a.node_label == b.node_label && a.rack_power_query == b.rack_power_query && a.rack_label == b.rack_label &&
         a.interval_s == b.interval_s;
}

}  // namespace

SlurmTelemetry::SlurmTelemetry() = default;
SlurmTelemetry::~SlurmTelemetry() {
  if (poller_) poller_->Stop();
}

std::string SlurmTelemetry::Configure(const TelemetrySettings& settings) {
  const bool restart = !SameSource(settings_, settings);
  settings_ = settings;
  if (!restart) return "";
  if (poller_) poller_->Stop();
  poller_.reset();
  if (!settings.enabled) return "telemetry: off";
  telemetry::PrometheusClientOptions options;
  // Tight: slurmctld never waits on these (another thread does), but a slow poll delays the next reading.
  options.timeout_ms = static_cast<long>(std::min(2.0, settings.interval_s) * 1000);
  options.connect_timeout_ms = std::min(options.timeout_ms, 500L);
  auto client = std::make_shared<telemetry::PrometheusClient>(settings.prometheus_url, options);
  poller_ = std::make_unique<telemetry::TelemetryPoller>(
      settings.interval_s, [settings, client] { return telemetry::FetchPowerReadings(settings, *client); },
      [this](const PowerReadings& r) { Deliver(r); });
  return absl::StrCat("telemetry: polling ", settings.prometheus_url, " every ", settings.interval_s,
                      " s (stale after ", settings.stale_after_s, " s, reclaim ", settings.reclaim_fraction * 100,
                      "%, on_overdraw ", OverdrawActionName(settings.on_overdraw), ")");
}

void SlurmTelemetry::Deliver(const PowerReadings& readings) {
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = readings;
  fetched_ = std::chrono::steady_clock::now();
  if (on_delivered_) on_delivered_();
}

void SlurmTelemetry::SetOnDelivered(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_delivered_ = std::move(hook);
}

void SlurmTelemetry::Reset() {
  tracker_.Reset();
  steered_ = false;
  applied_round_ = false;
}

std::optional<std::vector<LimitChange>> SlurmTelemetry::LimitsToPublish() const {
  if (!settings_.enabled || settings_.on_overdraw != OverdrawAction::kLowerLimits) return std::vector<LimitChange>();
  if (!steered_) return std::nullopt;
  return tracker_.lowered_limits();
}

std::vector<std::string> SlurmTelemetry::ApplyLatest(Ledger* ledger, const SteeringFacts& facts) {
  std::optional<PowerReadings> readings;
  double waited = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    readings.swap(latest_);
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - fetched_).count();
  }
  applied_round_ = readings && settings_.enabled;
  if (!applied_round_) return {};
  // Ages were taken when fetched; the readings have aged while parked.
  for (PowerReading& r : readings->nodes) r.age_s += waited;
  for (PowerReading& r : readings->racks) r.age_s += waited;
  std::vector<std::string> log = tracker_.Apply(settings_, *readings, ledger, facts);
  steered_ = settings_.on_overdraw == OverdrawAction::kLowerLimits;
  return log;
}

}  // namespace rackwise::slurm
