// What operators have set over gRPC on the extender (their allocations, node health overrides, failed GPUs and
// changed caps) and the sink that saves it after every change, so that it survives a restart (state_file.h). The
// caps and failed GPUs themselves live in the ledger; this class keeps which allocations and which node health
// are the operators', and makes the ClusterState the sink saves.
//
// Thread safety: none of its own. ExtenderService calls it only with its mutex held (the sink runs under it).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/topology.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::k8s {

class OperatorOverrides {
 public:
  using StateSink = std::function<absl::Status(const v1::ClusterState&)>;

  // Every one of `nodes` nodes starts with no override (kUp).
  explicit OperatorOverrides(size_t nodes) : health_(nodes, NodeHealth::kUp) {}

  // Unset: nothing is saved.
  void SetSink(StateSink sink) { sink_ = std::move(sink); }
  bool has_sink() const { return static_cast<bool>(sink_); }

  // The allocations placed over gRPC, by id.
  void AddAllocation(const std::string& id) { allocations_[id] = true; }
  void RemoveAllocation(const std::string& id) { allocations_.erase(id); }
  bool HoldsAllocation(const std::string& id) const { return allocations_.contains(id); }
  const absl::flat_hash_map<std::string, bool>& allocations() const { return allocations_; }

  // An operator's override of a node's health (kUp: none).
  NodeHealth health(NodeId node) const { return health_[node]; }
  void SetHealth(NodeId node, NodeHealth health) { health_[node] = health; }

  // Everything operators have set: their allocations, health overrides and failed GPUs, and the caps, from
  // `ledger`; the allocations counted oversubscribed (pods' too: their GPUs come back from the API server, their
  // count from here).
  v1::ClusterState Capture(const Ledger& ledger, const OversubscribedAllocations& oversubscribed) const;
  // Saves Capture(...) through the sink (no sink: OK).
  absl::Status Save(const Ledger& ledger, const OversubscribedAllocations& oversubscribed) const;
  // Save, and on failure runs `undo` and returns Unavailable: a change the caller sees succeed is always saved.
  absl::Status Persist(const Ledger& ledger, const OversubscribedAllocations& oversubscribed,
                       const std::function<void()>& undo) const;

 private:
  StateSink sink_;
  absl::flat_hash_map<std::string, bool> allocations_;  // allocations made over gRPC
  std::vector<NodeHealth> health_;                      // by NodeId
};

}  // namespace rackwise::k8s
