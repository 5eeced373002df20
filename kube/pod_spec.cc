// Pod -> PodInfo: the GPU count Kubernetes itself would charge (max of the sum over containers and each init
// container; requests default to limits for extended resources) and the annotations rackwise understands.
#include "pod_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "rackwise/locality.h"
#include "rackwise/power_bounds.h"

namespace rackwise::k8s {
namespace {

// Where other controllers say which group a pod belongs to: the JobSet controller's labels, and the
// coscheduling plugin's PodGroup label (its current name and its older one) and minimum member count.
constexpr char kJobSetNameLabel[] = "jobset.sigs.k8s.io/jobset-name";
constexpr char kJobSetReplicatedJobLabel[] = "jobset.sigs.k8s.io/replicatedjob-name";
constexpr char kJobSetReplicasLabel[] = "jobset.sigs.k8s.io/replicatedjob-replicas";
constexpr char kPodGroupLabel[] = "scheduling.x-k8s.io/pod-group";
constexpr char kPodGroupLegacyLabel[] = "pod-group.scheduling.sigs.k8s.io";
constexpr char kPodGroupMinMemberKey[] = "scheduling.x-k8s.io/min-member";

// The value under `key` in metadata.annotations, else metadata.labels; "" when in neither.
std::string MetaValue(const Json& meta, absl::string_view key, bool annotations_first = true) {
  const char* order[2] = {"annotations", "labels"};
  if (!annotations_first) std::swap(order[0], order[1]);
  for (const char* where : order) {
    if (const Json* m = FindField(meta, where); m != nullptr && m->is_object()) {
      auto it = m->find(key);
      if (it != m->end() && it->is_string()) return it->get<std::string>();
    }
  }
  return "";
}

absl::StatusOr<int> PositiveInt(absl::string_view text, absl::string_view field, int max) {
  int v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v) || v < 1 || v > max) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": \"", text, "\" is not a whole number in 1..", max));
  }
  return v;
}

// GPUs one container asks for: requests, else limits (extended resources cannot overcommit).
absl::StatusOr<int64_t> ContainerGpus(const Json& container, absl::string_view where) {
  const Json* resources = FindField(container, "resources");
  if (resources == nullptr) return 0;
  for (const char* kind : {"requests", "limits"}) {
    const Json* m = FindField(*resources, kind);
    if (m == nullptr || !m->is_object()) continue;
    auto it = m->find(kGpuResource);
    if (it == m->end() || it->is_null()) continue;
    absl::StatusOr<int64_t> q = ParseWholeQuantity(*it);
    if (!q.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".resources.", kind, "[", kGpuResource, "]: ", q.status().message()));
    }
    return *q;
  }
  return 0;
}

absl::StatusOr<int64_t> ListGpus(const Json& spec, absl::string_view field, bool sum) {
  const Json* list = FindField(spec, field);
  if (list == nullptr) return 0;
  if (!list->is_array()) return absl::InvalidArgumentError(absl::StrCat("spec.", field, ": expected an array"));
  int64_t total = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<int64_t> g = ContainerGpus((*list)[i], absl::StrCat("spec.", field, "[", i, "]"));
    if (!g.ok()) return g.status();
    total = sum ? total + *g : std::max(total, *g);
    if (total > 1'000'000) return absl::InvalidArgumentError(absl::StrCat("spec.", field, ": too many GPUs"));
  }
  return total;
}

// `parent[name]` when it is an object, else an empty object: a Pod missing metadata or spec still parses.
const Json& ObjectField(const Json& parent, const char* name) {
  static const Json kEmpty = Json::object();
  const Json* field = FindField(parent, name);
  return field != nullptr && field->is_object() ? *field : kEmpty;
}

// The GPUs Kubernetes charges the pod: init containers run one at a time, regular containers together.
absl::StatusOr<int> PodGpus(const Json& spec) {
  absl::StatusOr<int64_t> regular = ListGpus(spec, "containers", true);
  if (!regular.ok()) return regular.status();
  absl::StatusOr<int64_t> init = ListGpus(spec, "initContainers", false);
  if (!init.ok()) return init.status();
  int64_t gpus = std::max(*regular, *init);
  if (gpus > 1'000'000) return absl::InvalidArgumentError("spec.containers: too many GPUs");
  return static_cast<int>(gpus);
}

// rackwise.io/nvlink and rackwise.io/gpu-watts, when set.
absl::Status ReadPlacementAnnotations(const Json& meta, PodInfo* info) {
  if (std::string v = MetaValue(meta, kNvlinkAnnotation); !v.empty()) {
    info->locality = ParseLocality(v);
    if (!info->locality) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata.annotations[", kNvlinkAnnotation, "]: \"", v, "\" is not one of ", kLocalityChoices));
    }
  }
  if (std::string v = MetaValue(meta, kGpuWattsAnnotation); !v.empty()) {
    absl::StatusOr<double> w = ParseWattsPerGpu(v);
    if (!w.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata.annotations[", kGpuWattsAnnotation, "]: ", w.status().message()));
    }
    info->watts_per_gpu = *w;
  }
  return absl::OkStatus();
}

// A JobSet replicated job's pods: replicas x pods per job, each 1 when its label is missing.
absl::StatusOr<std::string> JobSetGroupSize(const Json& meta) {
  std::string replicas = MetaValue(meta, kJobSetReplicasLabel, false);
  std::string per_job = MetaValue(meta, kPodsPerJobKey);
  int r = 1, p = 1;
  if (!replicas.empty()) {
    absl::StatusOr<int> v = PositiveInt(replicas, kJobSetReplicasLabel, kMaxGroupSize);
    if (!v.ok()) return v.status();
    r = *v;
  }
  if (!per_job.empty()) {
    absl::StatusOr<int> v = PositiveInt(per_job, kPodsPerJobKey, kMaxGroupSize);
    if (!v.ok()) return v.status();
    p = *v;
  }
  if (static_cast<int64_t>(r) * p > kMaxGroupSize) {
    return absl::InvalidArgumentError(absl::StrCat("JobSet group of ", r, " x ", p, " pods is too large"));
  }
  return std::to_string(r * p);
}

// The Workload API pod group a pod names, as {the key its gang size is found under, the group's name}:
// spec.schedulingGroup.podGroupName (a PodGroup object; Kubernetes 1.36 on), else 1.35's spec.workloadRef {name,
// podGroup, podGroupReplicaKey} (a pod group inside the Workload; each replica key is a gang of its own). Both
// empty if the pod names none; an error for a reference the API server's validation would have refused.
absl::StatusOr<std::pair<std::string, std::string>> WorkloadPodGroup(const Json& spec) {
  if (const Json* g = FindField(spec, "schedulingGroup"); g != nullptr && g->is_object()) {
    std::string name = StringField(*g, "podGroupName");
    return std::make_pair(name, name);
  }
  const Json* w = FindField(spec, "workloadRef");
  if (w == nullptr || !w->is_object()) return std::make_pair(std::string(), std::string());
  const std::string name = StringField(*w, "name"), group = StringField(*w, "podGroup");
  if (name.empty() || group.empty()) {
    return absl::InvalidArgumentError("spec.workloadRef: needs both name and podGroup");
  }
  const std::string replica = StringField(*w, "podGroupReplicaKey");
  std::string key = absl::StrCat(name, "/", group);
  return std::make_pair(key, replica.empty() ? key : absl::StrCat(key, "/", replica));
}

// The pod's group and its size, from the first source that names one (see pod_spec.h for the precedence).
// A group of one is no group: the pod is placed on its own.
absl::Status ReadGroup(const Json& meta, const Json& spec, PodInfo* info) {
  std::string size_text = MetaValue(meta, kGroupSizeKey);
  if (!size_text.empty()) {
    absl::StatusOr<int> size = PositiveInt(size_text, kGroupSizeKey, kMaxGroupSize);
    if (!size.ok()) return size.status();
    info->annotated_group_size = *size;
  }
  absl::StatusOr<std::pair<std::string, std::string>> workload_ref = WorkloadPodGroup(spec);
  if (!workload_ref.ok()) return workload_ref.status();
  const std::string& workload = workload_ref->second;
  if (!workload.empty()) {
    info->workload_pod_group = absl::StrCat(info->namespace_, "/", workload_ref->first);
    info->workload_group = workload;
  }
  if (std::string g = MetaValue(meta, kGroupKey); !g.empty()) {
    if (size_text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("metadata: ", kGroupKey, " \"", g, "\" needs ", kGroupSizeKey));
    }
    info->group = absl::StrCat(info->namespace_, "/group/", g);
    info->group_source = GroupSource::kAnnotation;
  } else if (std::string js = MetaValue(meta, kJobSetNameLabel, false); !js.empty()) {
    std::string rj = MetaValue(meta, kJobSetReplicatedJobLabel, false);
    info->group = absl::StrCat(info->namespace_, "/jobset/", js, rj.empty() ? "" : "/", rj);
    info->group_source = GroupSource::kJobSet;
    if (size_text.empty()) {
      absl::StatusOr<std::string> size = JobSetGroupSize(meta);
      if (!size.ok()) return size.status();
      size_text = *size;
    }
  } else if (!workload.empty()) {
    // Without group-size the size is the PodGroup object's minCount, which the extender's DRA view supplies.
    if (size_text.empty()) return absl::OkStatus();
    info->group = absl::StrCat(info->namespace_, "/workload/", workload);
    info->group_source = GroupSource::kWorkload;
  } else {
    std::string pg = MetaValue(meta, kPodGroupLabel, false);
    if (pg.empty()) pg = MetaValue(meta, kPodGroupLegacyLabel, false);
    if (!pg.empty()) {
      info->group = absl::StrCat(info->namespace_, "/podgroup/", pg);
      info->group_source = GroupSource::kPodGroup;
      if (size_text.empty()) size_text = MetaValue(meta, kPodGroupMinMemberKey);
      if (size_text.empty()) size_text = "1";  // minMember unknown to us: the pod is placed alone
    }
  }
  if (!info->group.empty()) {
    absl::StatusOr<int> size = PositiveInt(size_text, "group size", kMaxGroupSize);
    if (!size.ok()) return size.status();
    info->group_size = *size;
    if (info->group_size == 1) {
      info->group.clear();
      info->group_source = GroupSource::kNone;
    }
  }
  return absl::OkStatus();
}

// spec.resourceClaims, each with the claim's name: its own, or the one status.resourceClaimStatuses names for a
// template's claim; and status.extendedResourceClaimStatus (the claim the scheduler made for nvidia.com/gpu when
// a DeviceClass backs it with DRA).
absl::Status ReadClaims(const Json& pod, const Json& spec, PodInfo* info) {
  if (const Json* ext = FindPath(pod, {"status", "extendedResourceClaimStatus"})) {
    info->extended_resource_claim = StringField(*ext, "resourceClaimName");
  }
  const Json* list = FindField(spec, "resourceClaims");
  if (list == nullptr) return absl::OkStatus();
  if (!list->is_array()) return absl::InvalidArgumentError("spec.resourceClaims: expected an array");
  const Json* statuses = FindPath(pod, {"status", "resourceClaimStatuses"});
  for (size_t i = 0; i < list->size(); ++i) {
    PodClaimRef ref;
    ref.name = StringField((*list)[i], "name");
    ref.claim = StringField((*list)[i], "resourceClaimName");
    ref.template_name = StringField((*list)[i], "resourceClaimTemplateName");
    if (ref.name.empty() || (ref.claim.empty() == ref.template_name.empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.resourceClaims[", i,
                       "]: needs a name and exactly one of resourceClaimName, resourceClaimTemplateName"));
    }
    if (!ref.template_name.empty() && statuses != nullptr && statuses->is_array()) {
      for (const Json& st : *statuses) {
        if (StringField(st, "name") == ref.name) ref.claim = StringField(st, "resourceClaimName");
      }
    }
    info->claims.push_back(std::move(ref));
  }
  return absl::OkStatus();
}

// What preemption weighs: spec.priority (an int32 in the API) and status.startTime (RFC 3339), for the work a
// victim would lose.
absl::Status ReadPriorityAndStart(const Json& spec, const Json* status, PodInfo* info) {
  if (const Json* p = FindField(spec, "priority")) {
    constexpr int64_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
    const bool in_range = p->is_number_unsigned()
                              ? p->get<uint64_t>() <= static_cast<uint64_t>(kMax)
                              : p->is_number_integer() && p->get<int64_t>() >= kMin && p->get<int64_t>() <= kMax;
    if (!in_range) {
      return absl::InvalidArgumentError(absl::StrCat("spec.priority: ", p->dump(), " is not a 32-bit integer"));
    }
    info->priority = p->get<int64_t>();
  }
  const Json* start = status != nullptr ? FindField(*status, "startTime") : nullptr;
  if (start == nullptr) return absl::OkStatus();
  absl::Time t;
  std::string why;
  if (!start->is_string() || !absl::ParseTime(absl::RFC3339_full, start->get<std::string>(), &t, &why)) {
    return absl::InvalidArgumentError(absl::StrCat("status.startTime: ", start->dump(), " is not an RFC 3339 time"));
  }
  info->start_unix_ms = absl::ToUnixMillis(t);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> ParseWholeQuantity(const Json& value) {
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v < 0) return absl::InvalidArgumentError("negative quantity");
    return v;
  }
  std::string text;
  if (value.is_number_float()) {
    text = std::to_string(value.get<double>());
  } else if (value.is_string()) {
    text = value.get<std::string>();
  } else {
    return absl::InvalidArgumentError("expected a quantity");
  }
  int64_t whole = 0;
  if (absl::SimpleAtoi(text, &whole)) {
    if (whole < 0) return absl::InvalidArgumentError(absl::StrCat("negative quantity \"", text, "\""));
    return whole;
  }
  double d = 0;
  if (absl::SimpleAtod(text, &d) && std::isfinite(d) && d >= 0 && d < 1e9 && std::floor(d) == d) {
    return static_cast<int64_t>(d);
  }
  return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is not a whole number of devices"));
}

absl::StatusOr<PodInfo> ParsePod(const Json& pod) {
  if (!pod.is_object()) return absl::InvalidArgumentError("Pod: expected an object");
  PodInfo info;
  const Json& meta = ObjectField(pod, "metadata");
  info.name = StringField(meta, "name");
  info.namespace_ = StringField(meta, "namespace");
  if (info.namespace_.empty()) info.namespace_ = "default";
  info.uid = StringField(meta, "uid");
  info.deleting = FindField(meta, "deletionTimestamp") != nullptr;
  const Json& spec = ObjectField(pod, "spec");
  info.node_name = StringField(spec, "nodeName");
  const Json* status = FindField(pod, "status");
  if (status != nullptr) info.phase = StringField(*status, "phase");
  if (absl::Status s = ReadPriorityAndStart(spec, status, &info); !s.ok()) return s;

  absl::StatusOr<int> gpus = PodGpus(spec);
  if (!gpus.ok()) return gpus.status();
  info.gpus = *gpus;
  if (absl::Status s = ReadPlacementAnnotations(meta, &info); !s.ok()) return s;
  if (absl::Status s = ReadGroup(meta, spec, &info); !s.ok()) return s;
  if (absl::Status s = ReadClaims(pod, spec, &info); !s.ok()) return s;
  return info;
}

}  // namespace rackwise::k8s
