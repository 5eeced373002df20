// GET /limits: the steered GPU limit of every held allocation that has pods (limits_document.h), for
// rackwise-node-agent to apply. Built from what the last telemetry round decided (TelemetryTracker's steered
// limits) and the pods the ledger holds; the extender never waits on a node: agents poll. It keeps what it last
// answered, so that the generation moves exactly when an entry changes.
//
// Thread safety: none of its own. ExtenderService calls it only with its mutex held.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "limits_document.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"

namespace rackwise::k8s {

class PublishedLimits {
 public:
  // The document for the allocations `ledger` holds that have pods in `pods_of` (by allocation id, in the order
  // they are listed), each at its declared watts (`oversubscribed`'s when counted at less) or, when steered
  // lower, `steered`'s. Its generation moves when any entry differs from the last published.
  LimitsDocument Publish(const Ledger& ledger, const OversubscribedAllocations& oversubscribed,
                         const absl::flat_hash_map<std::string, Milliwatts>& steered,
                         const absl::flat_hash_map<std::string, std::vector<SteeredPod>>& pods_of);

 private:
  LimitsDocument published_;  // what GET /limits last answered
};

}  // namespace rackwise::k8s
