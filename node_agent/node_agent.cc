#include "node_agent.h"

#include <ctime>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpu_device_id.h"

namespace rackwise::node_agent {
namespace {

// "namespace/name/uid" -> "namespace/name".
std::string PodOfOwner(const std::string& owner) {
  size_t slash = owner.rfind('/');
  return slash == std::string::npos ? owner : owner.substr(0, slash);
}

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

NodeAgent::NodeAgent(AgentSources sources, node_power::GpuPowerControl* gpus, OwnerLimits* limits,
                     AgentMetrics* metrics, std::function<void(const std::string&)> log)
    : sources_(std::move(sources)), gpus_(gpus), limits_(limits), metrics_(metrics), log_(std::move(log)) {}

absl::StatusOr<NodeGpus> NodeAgent::ReadBoards(const std::vector<PodDevices>& devices) {
  NodeGpus node;
  absl::StatusOr<int> count = gpus_->DeviceCount();
  if (!count.ok()) return count.status();
  node.count = *count;
  for (int i = 0; i < node.count; ++i) {
    absl::StatusOr<node_power::GpuPowerLimits> l = gpus_->Limits(i);
    if (!l.ok()) {
      log_(absl::StrCat("GPU ", i, ": cannot read its power limit range: ", l.status().message()));
      continue;  // pods on it are refused with "range unknown"
    }
    node.ranges[i] = {l->min_mw, l->max_mw};
  }
  for (const PodDevices& d : devices) {
    for (const std::string& id : d.device_ids) {
      absl::StatusOr<GpuDeviceRef> ref = ParseGpuDeviceId(id);
      if (!ref.ok() || ref->uuid.empty() || node.uuid_index.count(ref->uuid)) continue;
      absl::StatusOr<int> index = gpus_->IndexOfUuid(ref->uuid);
      if (index.ok()) node.uuid_index[ref->uuid] = *index;  // NotFound: the plan refuses the pod by name
    }
  }
  return node;
}

absl::Status NodeAgent::RunOnce() {
  const double now = static_cast<double>(std::time(nullptr));
  auto fail = [&](const char* source, const absl::Status& why) {
    metrics_->RoundDone(source, now);
    return absl::Status(why.code(), absl::StrCat(source, ": ", why.message(), "; limits left as they are"));
  };
  // The kubelet first: a pod created between the two reads is then only seen next round, never limited by
  // a stale device list.
  absl::StatusOr<std::vector<PodDevices>> devices = sources_.pod_devices();
  if (!devices.ok()) return fail("kubelet", devices.status());
  absl::StatusOr<std::vector<PodWatts>> pods = sources_.annotated_pods();
  if (!pods.ok()) return fail("apiserver", pods.status());
  if (sources_.steer) *pods = sources_.steer(std::move(*pods));
  absl::StatusOr<NodeGpus> boards = ReadBoards(*devices);
  if (!boards.ok()) return fail("nvml", boards.status());
  absl::StatusOr<std::vector<HeldLimit>> held = limits_->Held();
  if (!held.ok()) return fail("state", held.status());

  LimitPlan plan = PlanLimits(*pods, *devices, *held, *boards);
  Carry(plan, *held);
  Report(plan);
  held = limits_->Held();
  ReadLimitsInForce(held.ok() ? *held : std::vector<HeldLimit>{});
  metrics_->RoundDone("", now);
  return absl::OkStatus();
}

void NodeAgent::Carry(const LimitPlan& plan, const std::vector<HeldLimit>& held) {
  std::map<std::string, std::vector<int>> held_gpus;
  for (const HeldLimit& h : held) held_gpus[h.owner] = h.gpus;
  std::map<int, std::string> stuck;  // boards whose old limit could not be restored, and its owner
  for (const std::string& owner : plan.restore) {
    if (absl::Status s = limits_->Restore(owner); !s.ok()) {
      metrics_->CountRestoreFailed();
      for (int g : held_gpus[owner]) stuck[g] = owner;
      log_(absl::StrCat("restore of ", owner, "'s limit failed (retried next round): ", s.message()));
      continue;
    }
    metrics_->CountRestored(static_cast<int>(held_gpus[owner].size()));
    log_(absl::StrCat("restored the power limit of ", owner));
  }
  failed_.clear();
  for (const LimitToApply& limit : plan.apply) {
    absl::Status s = absl::OkStatus();
    for (int g : limit.gpus) {
      if (auto it = stuck.find(g); it != stuck.end()) {
        s = absl::FailedPreconditionError(absl::StrCat("GPU ", g, " still holds the limit of ", it->second));
        break;
      }
    }
    if (s.ok()) s = limits_->Apply(limit);
    if (!s.ok()) {
      metrics_->CountApplyFailed();
      failed_[PodOfOwner(limit.owner)] = absl::StrCat("cannot set the power limit: ", s.message());
      continue;
    }
    metrics_->CountApplied(static_cast<int>(limit.gpus.size()));
    log_(absl::StrCat("limited GPU ", absl::StrJoin(limit.gpus, ","), " to ", limit.milliwatts / 1000.0, " W for ",
                      limit.owner));
  }
}

void NodeAgent::Report(const LimitPlan& plan) {
  std::map<std::string, std::string> refused = failed_;
  for (const RefusedPod& r : plan.refused) refused[r.namespace_ + "/" + r.name] = r.reason;
  std::vector<std::pair<std::string, std::string>> labels;
  for (const auto& [key, reason] : refused) {
    labels.push_back(SplitKey(key));
    auto before = refused_.find(key);
    if (before == refused_.end() || before->second != reason) {
      log_(absl::StrCat("pod ", key, ": rackwise.io/gpu-watts not enforced: ", reason));
    }
  }
  refused_ = std::move(refused);
  metrics_->SetRefused(std::move(labels));
}

void NodeAgent::ReadLimitsInForce(const std::vector<HeldLimit>& held) {
  std::map<int, std::string> owner_of;
  for (const HeldLimit& h : held) {
    for (int g : h.gpus) owner_of[g] = PodOfOwner(h.owner);
  }
  std::vector<GpuLimitReading> readings;
  absl::StatusOr<int> count = gpus_->DeviceCount();
  for (int i = 0; count.ok() && i < *count; ++i) {
    absl::StatusOr<node_power::GpuPowerLimits> l = gpus_->Limits(i);
    if (!l.ok()) continue;
    readings.push_back({i, l->current_mw, l->default_mw, owner_of[i]});
  }
  metrics_->SetGpuLimits(std::move(readings));
}

}  // namespace rackwise::node_agent
