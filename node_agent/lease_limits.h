// OwnerLimits over node_power's PowerLimitLeases: the leases (one per GPU, in a state file written before
// every change) are grouped by owner. The state file belongs to the agent alone: any owner in it that the
// plan does not want is a pod that ended while the agent was away, and is restored.
#pragma once

#include <string>
#include <vector>

#include "node_agent.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_agent {

class LeaseLimits : public OwnerLimits {
 public:
  explicit LeaseLimits(node_power::PowerLimitLeases* leases) : leases_(leases) {}

  absl::StatusOr<std::vector<HeldLimit>> Held() override;
  absl::Status Apply(const LimitToApply& limit) override;
  absl::Status Restore(const std::string& owner) override;

 private:
  node_power::PowerLimitLeases* leases_;
};

// Leases grouped by owner, GPUs sorted. An owner whose GPUs carry different limits (not something the agent
// writes) is reported with milliwatts -1, so that the plan restores it and sets it again.
std::vector<HeldLimit> GroupLeases(const std::vector<node_power::PowerLimitLease>& leases);

}  // namespace rackwise::node_agent
