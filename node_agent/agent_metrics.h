// What the node agent did, in the Prometheus text format (0.0.4): limits applied, restored and failed
// (counters), the pods refused now and why they wait (gauges), each GPU's limit in force as last read from
// NVML, and the outcome of the last reconcile round per source. Thread-safe (the loop writes, /metrics reads).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace rackwise::node_agent {

struct GpuLimitReading {
  int index = 0;
  int64_t current_mw = 0, default_mw = 0;
  std::string owner;  // "namespace/name" of the pod whose limit this is; "" when none
};

class AgentMetrics {
 public:
  void CountApplied(int gpus);
  void CountRestored(int gpus);
  void CountApplyFailed();
  void CountRestoreFailed();
  // A round ended; `failed_source` is "" on success, else "kubelet", "apiserver", "nvml" or "state".
  void RoundDone(absl::string_view failed_source, double unix_seconds);
  // The pods refused in the last round ("namespace", "name"), replacing the previous set.
  void SetRefused(std::vector<std::pair<std::string, std::string>> pods);
  void SetGpuLimits(std::vector<GpuLimitReading> gpus);
  // The extender's steering as the agent last received it (limit_follower.h): the document's generation,
  // fetches that failed so far, and the pods ("namespace/name") held below their declared watts, with the
  // target in milliwatts per GPU. Rendered only once called (the agent follows an extender).
  void SetSteering(uint64_t generation, uint64_t fetch_failures, std::vector<std::pair<std::string, int64_t>> steered);

  uint64_t applied() const;
  uint64_t restored() const;
  uint64_t apply_failed() const;

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  uint64_t applied_ = 0, restored_ = 0, gpus_applied_ = 0, gpus_restored_ = 0;
  uint64_t apply_failed_ = 0, restore_failed_ = 0, rounds_ = 0;
  std::map<std::string, uint64_t> round_failures_;  // by source
  double last_success_ = 0;
  std::vector<std::pair<std::string, std::string>> refused_;
  std::vector<GpuLimitReading> gpus_;
  bool steering_ = false;
  uint64_t steering_generation_ = 0, steering_fetch_failures_ = 0;
  std::vector<std::pair<std::string, int64_t>> steered_;
};

// Prometheus label value escaping (backslash, quote, newline).
std::string EscapeLabel(absl::string_view value);

}  // namespace rackwise::node_agent
