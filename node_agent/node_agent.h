// One reconcile round of rackwise-node-agent: read the facts (the API server's annotated pods, the kubelet's
// device assignments, the boards through NVML, the limits held now), plan (limit_plan.h), carry the plan out
// through the limit keeper, and record what happened in the metrics.
//
// Failing safe: when a source cannot be read the round changes nothing (a limit is never lifted because the
// API server or the kubelet was briefly unreachable). A pod whose limit cannot be set is refused: it shows in
// rackwise_node_agent_pod_refused and in the log (once per change of reason), and is retried every round.
// The agent cannot stop a pod that is already running; the scheduler (the extender's ledger) counted it at
// its declared watts, so an administrator must act on the metric.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent_metrics.h"
#include "limit_plan.h"
#include "node_power/gpu_power_control.h"

namespace rackwise::node_agent {

// The limits the agent holds, per owner, surviving its restarts (node_power's PowerLimitLeases, adapted in
// lease_limits.h). Apply is all or nothing: on failure no board of the owner stays changed.
class OwnerLimits {
 public:
  virtual ~OwnerLimits() = default;
  virtual absl::StatusOr<std::vector<HeldLimit>> Held() = 0;
  virtual absl::Status Apply(const LimitToApply& limit) = 0;
  virtual absl::Status Restore(const std::string& owner) = 0;
};

struct AgentSources {
  std::function<absl::StatusOr<std::vector<PodWatts>>()> annotated_pods;  // the API server
  std::function<absl::StatusOr<std::vector<PodDevices>>()> pod_devices;   // the kubelet
  // Optional: folds the extender's steered limits into the pods to plan (LimitFollower::Steer).
  std::function<std::vector<PodWatts>(std::vector<PodWatts>)> steer;
};

class NodeAgent {
 public:
  NodeAgent(AgentSources sources, node_power::GpuPowerControl* gpus, OwnerLimits* limits, AgentMetrics* metrics,
            std::function<void(const std::string&)> log);

  // One round. Errors name the source that could not be read ("kubelet", "apiserver", "nvml", "state");
  // nothing was changed then.
  absl::Status RunOnce();

 private:
  absl::StatusOr<NodeGpus> ReadBoards(const std::vector<PodDevices>& devices);
  void Carry(const LimitPlan& plan, const std::vector<HeldLimit>& held);
  void Report(const LimitPlan& plan);
  void ReadLimitsInForce(const std::vector<HeldLimit>& held);

  AgentSources sources_;
  node_power::GpuPowerControl* gpus_;
  OwnerLimits* limits_;
  AgentMetrics* metrics_;
  std::function<void(const std::string&)> log_;
  std::map<std::string, std::string> refused_;  // "namespace/name" -> reason, as last logged
  std::map<std::string, std::string> failed_;   // apply failures of this round, by "namespace/name"
};

}  // namespace rackwise::node_agent
