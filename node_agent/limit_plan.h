// The node agent's decision, as a pure function: from what the API server says pods want (watts per GPU),
// what the kubelet says they hold (device ids) and what limits the agent holds now (the keeper's owners), to the
// limits to restore, the limits to apply and the pods refused, each with a reason. No NVML, gRPC or clock here:
// the shim gathers the facts (and resolves GPU UUIDs through NVML) and then carries the plan out.
//
// Rules:
//  - An owner is one incarnation of a pod: "<namespace>/<name>/<uid>", so a pod recreated under the same name
//    (StatefulSet) is restored and limited again rather than taken for the old one.
//  - A pod is limited once the kubelet reports its GPUs; until then nothing is done (it is not running yet).
//  - A held limit whose pod is gone, finished, no longer on the kubelet's list, or refused is restored;
//    a held limit whose GPUs changed is restored and applied again; one whose watts alone changed (steering,
//    limit_follower.h) is set again in place, so that the boards never pass through their default.
//  - Two pods on one board (time-slicing) cannot both own its limit: pods are served in increasing watts (then
//    owner name), so the board gets the lowest limit asked for, and a later pod touching a taken board is
//    refused, naming the pod that holds it. Power is never under-enforced because of sharing.
//  - Only boards that could draw more than the pod's watts are limited: a board whose maximum is at or below
//    them is left alone (the same rule as node_power::JobPowerEnforcer on Slurm nodes).
//  - A pod whose annotation is bad, whose device ids are malformed or unknown, or whose watts are below a
//    board's lowest limit is refused, never limited to something else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rackwise::node_agent {

// A pod bound to this node that carries rackwise.io/gpu-watts (from the API server).
struct PodWatts {
  std::string namespace_, name, uid;
  int64_t milliwatts_per_gpu = 0;  // 0 with `error` set: the annotation was refused
  std::string error;

  std::string Key() const { return namespace_ + "/" + name; }
  std::string Owner() const { return namespace_ + "/" + name + "/" + uid; }
};

// The nvidia.com/gpu device ids the kubelet assigned to one pod (all containers).
struct PodDevices {
  std::string namespace_, name;
  std::vector<std::string> device_ids;
  std::string error;  // a device whose board is unknown (dra_device_ids.h): the pod is refused with this
  std::string Key() const { return namespace_ + "/" + name; }
};

// A limit held now, as the keeper remembers it.
struct HeldLimit {
  std::string owner;
  std::vector<int> gpus;  // sorted
  int64_t milliwatts = 0;
};

// What the boards allow, per GPU index (NVML's constraints); a GPU missing here cannot be limited.
struct BoardRange {
  int64_t min_mw = 0, max_mw = 0;
};

// The facts about this node's GPUs the plan needs.
struct NodeGpus {
  int count = 0;                          // indices 0..count-1 exist
  std::map<std::string, int> uuid_index;  // GPU UUIDs the shim resolved through NVML
  std::map<int, BoardRange> ranges;
};

struct LimitToApply {
  std::string owner;
  std::vector<int> gpus;  // sorted, distinct; only the boards that need a limit
  int64_t milliwatts = 0;
};

struct RefusedPod {
  std::string namespace_, name;
  std::string reason;
};

struct LimitPlan {
  std::vector<std::string> restore;  // owners, restored before anything is applied
  std::vector<LimitToApply> apply;
  std::vector<RefusedPod> refused;
  std::vector<std::string> waiting;   // "namespace/name": annotated, but no GPUs reported by the kubelet yet
  std::vector<std::string> unneeded;  // "namespace/name": its boards cannot draw more than its watts anyway
};

LimitPlan PlanLimits(const std::vector<PodWatts>& pods, const std::vector<PodDevices>& devices,
                     const std::vector<HeldLimit>& held, const NodeGpus& gpus);

// Watts (as in the annotation) to milliwatts, rounded to the nearest; the caller bounds the watts first.
int64_t WattsToMilliwatts(double watts);

}  // namespace rackwise::node_agent
