#include "limit_plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gpu_device_id.h"

namespace rackwise::node_agent {
namespace {

// The distinct, sorted GPU indices behind a pod's device ids, or why they cannot be limited.
absl::StatusOr<std::vector<int>> ResolveIndices(const std::vector<std::string>& ids, const NodeGpus& gpus) {
  std::set<int> indices;
  for (const std::string& id : ids) {
    absl::StatusOr<GpuDeviceRef> ref = ParseGpuDeviceId(id);
    if (!ref.ok()) return ref.status();
    int index = -1;
    if (ref->index) {
      index = *ref->index;
      if (index >= gpus.count) {
        return absl::NotFoundError(absl::StrCat("device id \"", id, "\": this node has ", gpus.count, " GPUs"));
      }
    } else {
      auto it = gpus.uuid_index.find(ref->uuid);
      if (it == gpus.uuid_index.end()) {
        return absl::NotFoundError(absl::StrCat("device id \"", id, "\": no GPU with this UUID on this node"));
      }
      index = it->second;
    }
    indices.insert(index);
  }
  return std::vector<int>(indices.begin(), indices.end());
}

// The boards among `indices` that need a limit to hold `mw`: a board whose maximum is at or below `mw` cannot
// draw more than was counted and is left alone (the same rule as node_power::JobPowerEnforcer for Slurm).
// An error names the first board that cannot be held that low, or whose range is unknown.
absl::StatusOr<std::vector<int>> BoardsToLimit(const std::vector<int>& indices, int64_t mw, const NodeGpus& gpus) {
  std::vector<int> out;
  for (int i : indices) {
    auto it = gpus.ranges.find(i);
    if (it == gpus.ranges.end())
      return absl::UnavailableError(absl::StrCat("GPU ", i, ": its power limit range is unknown"));
    if (mw < it->second.min_mw) {
      return absl::OutOfRangeError(absl::StrCat(mw / 1000.0, " W is below GPU ", i, "'s lowest power limit (",
                                                it->second.min_mw / 1000.0, " W; its range is [",
                                                it->second.min_mw / 1000.0, ", ", it->second.max_mw / 1000.0, "] W)"));
    }
    if (mw < it->second.max_mw) out.push_back(i);
  }
  return out;
}

}  // namespace

int64_t WattsToMilliwatts(double watts) { return std::llround(watts * 1000.0); }

LimitPlan PlanLimits(const std::vector<PodWatts>& pods, const std::vector<PodDevices>& devices,
                     const std::vector<HeldLimit>& held, const NodeGpus& gpus) {
  LimitPlan plan;
  std::map<std::string, std::vector<std::string>> ids_by_pod;
  std::map<std::string, std::string> unknown_board;  // by pod: why one of its devices names no known board
  for (const PodDevices& d : devices) {
    std::vector<std::string>& ids = ids_by_pod[d.Key()];
    ids.insert(ids.end(), d.device_ids.begin(), d.device_ids.end());
    if (!d.error.empty()) unknown_board.emplace(d.Key(), d.error);
  }

  // Candidates: annotated, valid, running with GPUs the boards can be limited to.
  std::vector<std::pair<const PodWatts*, std::vector<int>>> candidates;
  for (const PodWatts& pod : pods) {
    if (!pod.error.empty()) {
      plan.refused.push_back({pod.namespace_, pod.name, pod.error});
      continue;
    }
    if (auto why = unknown_board.find(pod.Key()); why != unknown_board.end()) {
      plan.refused.push_back({pod.namespace_, pod.name, why->second});
      continue;
    }
    auto ids = ids_by_pod.find(pod.Key());
    if (ids == ids_by_pod.end() || ids->second.empty()) {
      plan.waiting.push_back(pod.Key());
      continue;
    }
    absl::StatusOr<std::vector<int>> indices = ResolveIndices(ids->second, gpus);
    if (!indices.ok()) {
      plan.refused.push_back({pod.namespace_, pod.name, std::string(indices.status().message())});
      continue;
    }
    absl::StatusOr<std::vector<int>> boards = BoardsToLimit(*indices, pod.milliwatts_per_gpu, gpus);
    if (!boards.ok()) {
      plan.refused.push_back({pod.namespace_, pod.name, std::string(boards.status().message())});
      continue;
    }
    if (boards->empty()) {
      plan.unneeded.push_back(pod.Key());
      continue;
    }
    candidates.emplace_back(&pod, std::move(*boards));
  }

  // Boards shared by several pods go to the lowest watts asked for.
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (a.first->milliwatts_per_gpu != b.first->milliwatts_per_gpu) {
      return a.first->milliwatts_per_gpu < b.first->milliwatts_per_gpu;
    }
    return a.first->Owner() < b.first->Owner();
  });
  std::map<int, std::string> board_owner;
  std::map<std::string, LimitToApply> wanted;
  for (const auto& [pod, indices] : candidates) {
    std::string taken_by;
    for (int i : indices) {
      if (auto it = board_owner.find(i); it != board_owner.end()) {
        taken_by =
            absl::StrCat("GPU ", i, " is shared with ", it->second, ", which is limited to fewer or equal watts");
        break;
      }
    }
    if (!taken_by.empty()) {
      plan.refused.push_back({pod->namespace_, pod->name, taken_by});
      continue;
    }
    for (int i : indices) board_owner[i] = pod->Key();
    wanted[pod->Owner()] = LimitToApply{pod->Owner(), indices, pod->milliwatts_per_gpu};
  }

  for (const HeldLimit& h : held) {
    auto it = wanted.find(h.owner);
    if (it != wanted.end() && it->second.gpus == h.gpus && h.milliwatts >= 0) {
      // Already in force, or new watts on the same boards (steering moves a running pod's limit): set in place,
      // never through the board's default, and the lease keeps the limit recorded before the first.
      if (it->second.milliwatts == h.milliwatts) wanted.erase(it);
      continue;
    }
    plan.restore.push_back(h.owner);
  }
  for (auto& [owner, limit] : wanted) plan.apply.push_back(std::move(limit));
  return plan;
}

}  // namespace rackwise::node_agent
