// The pods bound to this node that ask for a GPU power limit (rackwise.io/gpu-watts), from the API server.
// The kubelet's PodResources API carries no annotations, so the agent lists this node's pods
// (fieldSelector spec.nodeName=<node>) with the extender's API-server client and reads them with the
// extender's own pod parser, so both faces read the annotation the same way.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "json_fields.h"
#include "limit_plan.h"

namespace rackwise::k8s {
class KubeClient;
}

namespace rackwise::node_agent {

// The annotated pods among `items` (core/v1 Pod objects) that hold GPUs on `node`: bound there and not
// finished. A pod whose annotations cannot be read is returned with `error` set (refused, never limited).
std::vector<PodWatts> AnnotatedPods(const std::vector<k8s::Json>& items, const std::string& node);

// Lists every pod on `node` (paginated) and returns AnnotatedPods of them. Errors: the client's (Unavailable,
// PermissionDenied naming the missing right, ...).
absl::StatusOr<std::vector<PodWatts>> ListAnnotatedPods(k8s::KubeClient* client, const std::string& node);

}  // namespace rackwise::node_agent
