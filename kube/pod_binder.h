// What binds and evicts pods at the API server, apart from how: KubeClient does it over HTTP; the extender and
// its tests hold this interface, so that the extender's logic is tested without an API server.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace rackwise::k8s {

// A pod to bind to a node (upstream's ExtenderBindingArgs).
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

// Posts a pod's binding to the API server. Implemented by KubeClient; absent when standalone.
class PodBinder {
 public:
  virtual ~PodBinder() = default;
  virtual absl::Status BindPod(const BindingArgs& binding) = 0;
  // Asks the API server to evict a pod (its controller starts a replacement, which is scheduled anew): what
  // telemetry.on_overdraw: requeue_newest does to the newest pods of an overdrawn rack.
  virtual absl::Status EvictPod(const std::string& pod_namespace, const std::string& pod_name) {
    return absl::UnimplementedError("this binder cannot evict pods");
  }
};

}  // namespace rackwise::k8s
