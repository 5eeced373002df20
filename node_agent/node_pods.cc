#include "node_pods.h"

#include "absl/strings/str_cat.h"
#include "kube_client.h"
#include "pod_spec.h"

namespace rackwise::node_agent {
namespace {

// Whether the pod carries the watts annotation (or label, which the extender also reads), even an empty one.
bool AsksForWatts(const k8s::Json& pod) {
  for (const char* where : {"annotations", "labels"}) {
    const k8s::Json* m = k8s::FindPath(pod, {"metadata", where});
    if (m != nullptr && m->is_object() && m->contains(k8s::kGpuWattsAnnotation)) return true;
  }
  return false;
}

}  // namespace

std::vector<PodWatts> AnnotatedPods(const std::vector<k8s::Json>& items, const std::string& node) {
  std::vector<PodWatts> out;
  for (const k8s::Json& item : items) {
    if (!AsksForWatts(item)) continue;
    absl::StatusOr<k8s::PodInfo> pod = k8s::ParsePod(item);
    PodWatts w;
    if (!pod.ok()) {
      const k8s::Json* meta = k8s::FindField(item, "metadata");
      w.name = meta ? k8s::StringField(*meta, "name") : "";
      w.namespace_ = meta ? k8s::StringField(*meta, "namespace") : "";
      if (w.namespace_.empty()) w.namespace_ = "default";
      w.uid = meta ? k8s::StringField(*meta, "uid") : "";
      w.error = std::string(pod.status().message());
      const k8s::Json* spec = k8s::FindField(item, "spec");
      const k8s::Json* status = k8s::FindField(item, "status");
      std::string phase = status ? k8s::StringField(*status, "phase") : "";
      if (spec == nullptr || k8s::StringField(*spec, "nodeName") != node) continue;
      if (phase == "Succeeded" || phase == "Failed") continue;
      out.push_back(std::move(w));
      continue;
    }
    if (pod->node_name != node || !pod->Holds()) continue;
    w.name = pod->name;
    w.namespace_ = pod->namespace_;
    w.uid = pod->uid;
    if (pod->watts_per_gpu <= 0) {
      w.error = absl::StrCat("metadata.annotations[", k8s::kGpuWattsAnnotation, "]: empty");
    } else {
      w.milliwatts_per_gpu = WattsToMilliwatts(pod->watts_per_gpu);
    }
    out.push_back(std::move(w));
  }
  return out;
}

absl::StatusOr<std::vector<PodWatts>> ListAnnotatedPods(k8s::KubeClient* client, const std::string& node) {
  std::vector<k8s::Json> items;
  std::string continue_token;
  const std::string selector = absl::StrCat("spec.nodeName=", node);
  for (int page = 0; page < 10'000; ++page) {
    absl::StatusOr<k8s::ListPage> p = client->List("/api/v1/pods", selector, 500, continue_token);
    if (!p.ok()) return p.status();
    for (k8s::Json& item : p->items) items.push_back(std::move(item));
    continue_token = p->continue_token;
    if (continue_token.empty()) return AnnotatedPods(items, node);
  }
  return absl::InternalError("LIST /api/v1/pods: more than 10,000 pages");
}

}  // namespace rackwise::node_agent
