// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm records to the core's requests and allocations. See job_translation.h.
#include "job_translation.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "job_options.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr uint64_t kMaxGpus = 1u << 20;

std::vector<std::string_view> JobEnv(const job_record_t* job) {
  std::vector<std::string_view> env;
  for (uint32_t i = 0; job->spank_job_env && i < job->spank_job_env_size; ++i) {
    if (job->spank_job_env[i]) env.emplace_back(job->spank_job_env[i]);
  }
  return env;
}

}  // namespace

GpuAsk ReadGpuAsk(const job_record_t* job, uint32_t gpu_plugin_id) {
  GpuAsk ask;
  uint64_t per_job = 0, per_node = 0, per_task = 0, per_socket = 0;
  ForEachGpuState(job->gres_list_req, gpu_plugin_id, [&](gres_state_t* state) {
    const auto* js = static_cast<const gres_job_state_t*>(state->gres_data);
    per_job += js->gres_per_job;
    per_node += js->gres_per_node;
    per_task += js->gres_per_task;
    per_socket += js->gres_per_socket;
  });
  const JobDetails* details = job->details;
  const uint64_t min_nodes = (details && details->min_nodes && details->min_nodes != NO_VAL) ? details->min_nodes : 1;
  uint64_t gpus = 0, gpn = 0;
  if (per_socket) {
    ask.translated = false;
    gpus = 1;
  } else if (per_job) {
    gpus = per_job;
    gpn = per_node;
  } else if (per_node) {
    gpus = per_node * min_nodes;
    gpn = per_node;
  } else if (per_task) {
    const uint64_t tasks =
        (details && details->num_tasks && details->num_tasks != NO_VAL) ? details->num_tasks : min_nodes;
    gpus = per_task * tasks;
    if (details && details->ntasks_per_node && details->ntasks_per_node != NO_VAL16) {
      gpn = per_task * details->ntasks_per_node;
    }
  }
  if (gpus > kMaxGpus || gpn > kMaxGpus || (gpn && gpus % gpn)) {
    ask.translated = false;  // cons_tres judges the shape; the ledger still checks power
    gpus = std::min<uint64_t>(gpus, kMaxGpus);
    gpn = 0;
  }
  ask.gpus = static_cast<int>(gpus);
  ask.gpus_per_node = static_cast<int>(gpn);
  return ask;
}

Milliwatts JobWatts(const job_record_t* job) {
  absl::StatusOr<JobOptions> options = ParseJobEnv(JobEnv(job));
  if (!options.ok()) return 0;
  return WattsToMilliwatts(options->watts_per_gpu);
}

namespace {

// The nodes the job names with -w when they are as many as it needs (then it may use only those), else null.
const bitstr_t* NamedNodesOnly(const JobDetails* details) {
  if (details && details->req_node_bitmap &&
      static_cast<uint32_t>(bit_set_count(details->req_node_bitmap)) >= details->min_nodes) {
    return details->req_node_bitmap;
  }
  return nullptr;
}

// The described nodes of the job's partition, less those it excludes: what `required` counts its fewest domains
// over, where Slurm offers only the nodes free now. Empty (counted over the offered nodes, as before) for a job
// whose node features or named nodes narrow the partition in ways only slurmctld evaluates.
std::vector<NodeId> EligibleNodes(const job_record_t* job, bool offered_is_allowed, const ClusterModel& model) {
  const JobDetails* details = job->details;
  if (!offered_is_allowed || !job->part_ptr || !job->part_ptr->node_bitmap || !details ||
      (details->features && *details->features) || details->req_node_bitmap) {
    return {};
  }
  bitstr_t* partition = job->part_ptr->node_bitmap;
  std::vector<NodeId> out;
  for (int i : BitmapIndices(partition)) {
    if (details->exc_node_bitmap && i < bit_size(details->exc_node_bitmap) && bit_test(details->exc_node_bitmap, i))
      continue;
    if (NodeId n = model.ToNode(i); n != kNoId) out.push_back(n);
  }
  return out;
}

}  // namespace

std::optional<PlacementRequest> MakeRequest(const job_record_t* job, const GpuAsk& ask, const bitstr_t* bitmap,
                                            const ClusterModel& model, time_t now, const bitstr_t* every_usable) {
  PlacementRequest request;
  request.id = JobId(job);
  request.gpus = ask.gpus;
  request.gpus_per_node = ask.gpus_per_node;
  if (absl::StatusOr<JobOptions> options = ParseJobEnv(JobEnv(job)); options.ok()) {
    request.locality = options->locality;
    request.watts_per_gpu = options->watts_per_gpu;
  } else {
    info("rackwise: %s: ignoring its options: %s", request.id.c_str(), std::string(options.status().message()).c_str());
  }
  // How long the job has waited, for the policy's preferred_wait (a preferred job waits that long for its
  // fewest domains before it may start spread out). The core reads no clock; the face passes it in.
  const JobDetails* details = job->details;
  if (details) {
    const time_t since = std::max(details->submit_time, details->begin_time);
    if (since > 0 && now > since) request.waited_seconds = static_cast<double>(now - since);
  }
  // A job that names its nodes (-w) with exactly as many as it needs may only use those.
  const bitstr_t* named = NamedNodesOnly(details);
  const bitstr_t* allowed = named ? named : bitmap;
  auto* offered = const_cast<bitstr_t*>(bitmap);  // Slurm's bitmap calls take non-const pointers
  auto* usable = const_cast<bitstr_t*>(every_usable);
  if (allowed == bitmap && usable && bit_size(usable) == bit_size(offered) && bit_super_set(usable, offered)) {
    // Every node the core could use is offered: no list (an empty list means every node). The offer still has to
    // hold a described node for the job to be the core's at all.
    for (int i : BitmapIndices(offered)) {
      if (model.ToNode(i) != kNoId) return request;
    }
    return std::nullopt;
  }
  for (int i : BitmapIndices(allowed)) {
    if (allowed != bitmap &&
        (i >= bit_size(const_cast<bitstr_t*>(bitmap)) || !bit_test(const_cast<bitstr_t*>(bitmap), i)))
      continue;
    if (NodeId n = model.ToNode(i); n != kNoId) request.allowed_nodes.push_back(n);
  }
  if (request.allowed_nodes.empty()) return std::nullopt;
  request.eligible_nodes = EligibleNodes(job, allowed == bitmap, model);
  return request;
}

std::optional<std::vector<NodeId>> NodesToWaitFor(const job_record_t* job, const PlacementRequest& request,
                                                  const ClusterModel& model) {
  if (const bitstr_t* named = NamedNodesOnly(job->details)) {
    std::vector<NodeId> nodes;
    for (int i : BitmapIndices(named)) {
      if (NodeId n = model.ToNode(i); n != kNoId) nodes.push_back(n);
    }
    if (nodes.empty()) return std::nullopt;
    return nodes;
  }
  return request.eligible_nodes.empty() ? request.allowed_nodes : request.eligible_nodes;
}

std::optional<Allocation> SelectedGpus(const job_record_t* job, const bitstr_t* nodes, const ClusterModel& model,
                                       uint32_t gpu_plugin_id) {
  Allocation allocation;
  allocation.id = JobId(job);
  allocation.per_gpu = JobWatts(job);
  for (int i : BitmapIndices(nodes)) {
    const NodeId n = model.ToNode(i);
    if (n == kNoId) continue;
    GpuMask mask = 0;
    uint64_t count = 0;
    ForEachGpuState(job->gres_list_req, gpu_plugin_id, [&](gres_state_t* state) {
      const auto* js = static_cast<const gres_job_state_t*>(state->gres_data);
      if (static_cast<uint32_t>(i) >= js->total_node_cnt) return;
      if (js->gres_bit_select && js->gres_bit_select[i]) {
        mask |= BitsToMask(js->gres_bit_select[i]);
      } else if (js->gres_cnt_node_select) {
        count += js->gres_cnt_node_select[i];
      }
    });
    if (count) mask |= LowestBits(~(model.ledger().allocated_gpus(n) | mask), count);
    if (mask) allocation.nodes.push_back({n, mask});
  }
  if (allocation.nodes.empty()) return std::nullopt;
  return allocation;
}

std::optional<Allocation> AllocatedGpus(const job_record_t* job, const ClusterModel& model, uint32_t gpu_plugin_id) {
  const std::vector<int> job_nodes = BitmapIndices(job->node_bitmap);
  std::vector<GpuMask> masks(job_nodes.size(), 0);
  std::vector<uint64_t> counts(job_nodes.size(), 0);
  ForEachGpuState(job->gres_list_alloc, gpu_plugin_id, [&](gres_state_t* state) {
    const auto* js = static_cast<const gres_job_state_t*>(state->gres_data);
    for (uint32_t j = 0; j < js->node_cnt && j < job_nodes.size(); ++j) {
      if (js->gres_bit_alloc && js->gres_bit_alloc[j]) {
        masks[j] |= BitsToMask(js->gres_bit_alloc[j]);
      } else if (js->gres_cnt_node_alloc) {
        counts[j] += js->gres_cnt_node_alloc[j];
      }
    }
  });
  Allocation allocation;
  allocation.id = JobId(job);
  allocation.per_gpu = JobWatts(job);
  for (size_t j = 0; j < job_nodes.size(); ++j) {
    const NodeId n = model.ToNode(job_nodes[j]);
    if (n == kNoId) continue;
    GpuMask mask = masks[j];
    if (counts[j]) mask |= LowestBits(~(model.ledger().allocated_gpus(n) | mask), counts[j]);
    if (mask) allocation.nodes.push_back({n, mask});
  }
  if (allocation.nodes.empty()) return std::nullopt;
  std::sort(allocation.nodes.begin(), allocation.nodes.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return allocation;
}

}  // namespace rackwise::slurm
