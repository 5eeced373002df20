// GET /limits: the steered GPU limit of every held allocation that has pods (limits_document.h), for
// rackwise-node-agent to apply. Built from what the last telemetry round decided (TelemetryTracker) and the
// pods the ledger holds; the extender never waits on a node: agents poll.
#include <algorithm>

#include "extender_service.h"

namespace rackwise::k8s {

LimitsDocument ExtenderService::SteeredLimits() {
  std::lock_guard<std::mutex> lock(mu_);
  // Each allocation's pods: alone, by its ledger id; in a group, by the slot it was bound to.
  absl::flat_hash_map<std::string, std::vector<std::string>> pods_of;
  for (const auto& [key, record] : pods_) {
    if (!record.allocation_id.empty()) pods_of[record.allocation_id].push_back(key);
  }
  for (const auto& [group, reservation] : gangs_.all()) {
    for (const GangSlot& slot : reservation.slots) {
      if (!slot.pod.empty()) pods_of[slot.allocation_id].push_back(slot.pod);
    }
  }
  LimitsDocument document;
  for (const Allocation* a : ledger_.Allocations()) {
    auto keys = pods_of.find(a->id);
    if (keys == pods_of.end()) continue;  // an operator's allocation or a free slot: no GPU to limit
    SteeredLimit entry;
    entry.allocation = a->id;
    // The GPUs' limit is what the job declared, also when the ledger counts it at less (oversubscribed).
    const OversubscribedAllocation* over = oversubscribed_.Find(a->id);
    entry.declared_milliwatts_per_gpu = over != nullptr ? over->declared : ledger_.PerGpu(*a, a->nodes.front().node);
    auto steered = telemetry_.steered_limits().find(a->id);
    entry.milliwatts_per_gpu = steered == telemetry_.steered_limits().end()
                                   ? entry.declared_milliwatts_per_gpu
                                   : std::min(steered->second, entry.declared_milliwatts_per_gpu);
    std::sort(keys->second.begin(), keys->second.end());
    for (const std::string& key : keys->second) {
      auto record = pods_.find(key);
      if (record == pods_.end() || record->second.node == kNoId) continue;
      const size_t slash = key.find('/');
      entry.pods.push_back({key.substr(0, slash), key.substr(slash + 1), record->second.uid,
                            topology_->nodes()[record->second.node].name});
    }
    if (!entry.pods.empty()) document.allocations.push_back(std::move(entry));
  }
  // The generation moves whenever a target or a pod changes, so an agent (or an operator) sees that something
  // did without comparing entries.
  if (document.allocations != published_limits_.allocations) {
    published_limits_.allocations = document.allocations;
    ++published_limits_.generation;
  }
  document.generation = published_limits_.generation;
  return document;
}

}  // namespace rackwise::k8s
