#include "agent_metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise::node_agent {

std::string EscapeLabel(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

void AgentMetrics::CountApplied(int gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  ++applied_;
  gpus_applied_ += gpus;
}

void AgentMetrics::CountRestored(int gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  ++restored_;
  gpus_restored_ += gpus;
}

void AgentMetrics::CountApplyFailed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++apply_failed_;
}

void AgentMetrics::CountRestoreFailed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++restore_failed_;
}

void AgentMetrics::RoundDone(absl::string_view failed_source, double unix_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rounds_;
  if (failed_source.empty()) {
    last_success_ = unix_seconds;
  } else {
    ++round_failures_[std::string(failed_source)];
  }
}

void AgentMetrics::SetRefused(std::vector<std::pair<std::string, std::string>> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  refused_ = std::move(pods);
}

void AgentMetrics::SetGpuLimits(std::vector<GpuLimitReading> gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  gpus_ = std::move(gpus);
}

uint64_t AgentMetrics::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

uint64_t AgentMetrics::restored() const {
  std::lock_guard<std::mutex> lock(mu_);
  return restored_;
}

uint64_t AgentMetrics::apply_failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return apply_failed_;
}

void AgentMetrics::SetSteering(uint64_t generation, uint64_t fetch_failures,
                               std::vector<std::pair<std::string, int64_t>> steered) {
  std::lock_guard<std::mutex> lock(mu_);
  steering_ = true;
  steering_generation_ = generation;
  steering_fetch_failures_ = fetch_failures;
  steered_ = std::move(steered);
}

std::string AgentMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  auto family = [&out](absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  };
  family("rackwise_node_agent_limits_applied_total", "counter", "Pod power limits applied (one per pod).");
  absl::StrAppend(&out, "rackwise_node_agent_limits_applied_total ", applied_, "\n");
  family("rackwise_node_agent_gpu_limits_applied_total", "counter", "GPU power limits applied (one per GPU).");
  absl::StrAppend(&out, "rackwise_node_agent_gpu_limits_applied_total ", gpus_applied_, "\n");
  family("rackwise_node_agent_limits_restored_total", "counter", "Pod power limits restored (one per pod).");
  absl::StrAppend(&out, "rackwise_node_agent_limits_restored_total ", restored_, "\n");
  family("rackwise_node_agent_gpu_limits_restored_total", "counter", "GPU power limits restored (one per GPU).");
  absl::StrAppend(&out, "rackwise_node_agent_gpu_limits_restored_total ", gpus_restored_, "\n");
  family("rackwise_node_agent_limits_failed_total", "counter",
         "Attempts to apply or restore a pod's power limit that failed (retried every round).");
  absl::StrAppend(&out, "rackwise_node_agent_limits_failed_total{op=\"apply\"} ", apply_failed_, "\n");
  absl::StrAppend(&out, "rackwise_node_agent_limits_failed_total{op=\"restore\"} ", restore_failed_, "\n");
  family("rackwise_node_agent_pod_refused", "gauge",
         "1 for each pod whose rackwise.io/gpu-watts is not enforced (bad value, out of range, failed); see the log.");
  for (const auto& [ns, name] : refused_) {
    absl::StrAppend(&out, "rackwise_node_agent_pod_refused{namespace=\"", EscapeLabel(ns), "\",pod=\"",
                    EscapeLabel(name), "\"} 1\n");
  }
  family("rackwise_node_agent_gpu_power_limit_watts", "gauge", "Power limit in force per GPU, read from NVML.");
  for (const GpuLimitReading& g : gpus_) {
    absl::StrAppend(&out, "rackwise_node_agent_gpu_power_limit_watts{gpu=\"", g.index, "\",pod=\"",
                    EscapeLabel(g.owner), "\"} ", absl::StrFormat("%.3f", g.current_mw / 1000.0), "\n");
  }
  family("rackwise_node_agent_gpu_default_power_limit_watts", "gauge", "The board's default power limit per GPU.");
  for (const GpuLimitReading& g : gpus_) {
    if (g.default_mw <= 0) continue;  // the driver cannot say
    absl::StrAppend(&out, "rackwise_node_agent_gpu_default_power_limit_watts{gpu=\"", g.index, "\"} ",
                    absl::StrFormat("%.3f", g.default_mw / 1000.0), "\n");
  }
  family("rackwise_node_agent_rounds_total", "counter", "Reconcile rounds run.");
  absl::StrAppend(&out, "rackwise_node_agent_rounds_total ", rounds_, "\n");
  family("rackwise_node_agent_round_failures_total", "counter",
         "Rounds that changed nothing because a source could not be read (limits are left as they are).");
  for (const char* source : {"apiserver", "kubelet", "nvml", "state"}) {
    auto it = round_failures_.find(source);
    absl::StrAppend(&out, "rackwise_node_agent_round_failures_total{source=\"", source, "\"} ",
                    it == round_failures_.end() ? 0 : it->second, "\n");
  }
  if (steering_) {
    family("rackwise_node_agent_limits_generation", "gauge", "Generation of the extender's /limits last received.");
    absl::StrAppend(&out, "rackwise_node_agent_limits_generation ", steering_generation_, "\n");
    family("rackwise_node_agent_limits_fetch_failures_total", "counter",
           "Fetches of the extender's /limits that failed (the last limits received stay in force).");
    absl::StrAppend(&out, "rackwise_node_agent_limits_fetch_failures_total ", steering_fetch_failures_, "\n");
    family("rackwise_node_agent_steered_limit_watts", "gauge",
           "The extender's steered GPU power limit for a pod held below its declared watts.");
    for (const auto& [pod, mw] : steered_) {
      absl::StrAppend(&out, "rackwise_node_agent_steered_limit_watts{pod=\"", EscapeLabel(pod), "\"} ",
                      absl::StrFormat("%.3f", mw / 1000.0), "\n");
    }
  }
  family("rackwise_node_agent_last_success_timestamp_seconds", "gauge", "End of the last complete round.");
  absl::StrAppend(&out, "rackwise_node_agent_last_success_timestamp_seconds ", absl::StrFormat("%.3f", last_success_),
                  "\n");
  return out;
}

}  // namespace rackwise::node_agent
