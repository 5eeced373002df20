// What the extender service's tests share: a small capped cluster, a device-plugin pod, filter arguments over
// every node, a binding.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "extender_service.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s::testing {

// Two capped H100 racks of 4 nodes (the cap binds at about 20 GPUs per rack) and two NVL72 racks, synced.
inline std::unique_ptr<ExtenderService> NewTestService(ExtenderMetrics* metrics, ExtenderOptions options = {}) {
  SyntheticClusterSpec spec;
  spec.name = "service";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  auto s = std::make_unique<ExtenderService>(std::make_unique<Topology>(std::move(*t)), options, nullptr, metrics);
  s->SetSynced(true);
  return s;
}

// The fields of a core/v1 Pod the extender reads, with `gpus` nvidia.com/gpu in namespace ml.
inline Json PluginPodJson(const std::string& name, int gpus, Json annotations = Json::object()) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
          {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"limits", {{kGpuResource, gpus}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

inline ExtenderArgs ArgsOverAllNodes(const Json& pod, const ExtenderService& s) {
  ExtenderArgs args;
  args.pod = pod;
  std::vector<std::string> names;
  for (const Node& n : s.topology().nodes()) names.push_back(n.name);
  args.SetNodeNames(std::move(names));
  return args;
}

// The pod as the API server shows it once bound and running.
inline PodInfo BoundPod(Json pod, const std::string& node) {
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  absl::StatusOr<PodInfo> info = ParsePod(pod);
  EXPECT_TRUE(info.ok()) << info.status();
  return *info;
}

inline BindingArgs BindingOf(const std::string& pod, const std::string& node) {
  return {pod, "ml", "uid-" + pod, node};
}

}  // namespace rackwise::k8s::testing
