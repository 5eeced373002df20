#include "lease_limits.h"

#include <algorithm>
#include <map>

namespace rackwise::node_agent {

std::vector<HeldLimit> GroupLeases(const std::vector<node_power::PowerLimitLease>& leases) {
  std::map<std::string, HeldLimit> by_owner;
  for (const node_power::PowerLimitLease& lease : leases) {
    auto [it, fresh] = by_owner.try_emplace(lease.owner, HeldLimit{lease.owner, {}, lease.limit_mw});
    if (!fresh && it->second.milliwatts != lease.limit_mw) it->second.milliwatts = -1;
    it->second.gpus.push_back(lease.gpu);
  }
  std::vector<HeldLimit> out;
  for (auto& [owner, held] : by_owner) {
    std::sort(held.gpus.begin(), held.gpus.end());
    out.push_back(std::move(held));
  }
  return out;
}

absl::StatusOr<std::vector<HeldLimit>> LeaseLimits::Held() {
  absl::StatusOr<std::vector<node_power::PowerLimitLease>> leases = leases_->List();
  if (!leases.ok()) return leases.status();
  return GroupLeases(*leases);
}

absl::Status LeaseLimits::Apply(const LimitToApply& limit) {
  return leases_->Acquire(limit.owner, limit.gpus, limit.milliwatts);
}

absl::Status LeaseLimits::Restore(const std::string& owner) {
  absl::StatusOr<std::vector<node_power::ReleasedLease>> released = leases_->Release(owner);
  return released.status();
}

}  // namespace rackwise::node_agent
