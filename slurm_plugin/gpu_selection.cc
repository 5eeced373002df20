// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: the GPUs a job_test selected (cons_tres's gres_bit_select and
// gres_cnt_node_select), made equal to the core's decision where Slurm allows it.
#include <algorithm>
#include <bit>
#include <cinttypes>
#include <utility>
#include <vector>

#include "gpu_selection.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

// Slurm's record of a node's GPUs: which are held and how many there are (-1: unknown).
struct NodeGpuState {
  GpuMask busy = 0;
  int size = -1;
};

NodeGpuState GpuStateOfNode(int slurm_index, uint32_t gpu_plugin_id) {
  NodeGpuState out;
  ForEachGpuState(node_record_table_ptr[slurm_index]->gres_list, gpu_plugin_id, [&](gres_state_t* state) {
    const auto* ns = static_cast<const gres_node_state_t*>(state->gres_data);
    out.busy |= BitsToMask(ns->gres_bit_alloc);
    out.size = ns->gres_bit_alloc ? bit_size(ns->gres_bit_alloc) : static_cast<int>(ns->gres_cnt_avail);
  });
  return out;
}

// A request field that holds a value (Slurm leaves unset ones 0 or NO_VAL*).
bool Given(uint16_t v) { return v != 0 && v != NO_VAL16 && v != INFINITE16; }
bool Given(uint64_t v) { return v != 0 && v != NO_VAL64 && v != INFINITE64 && v != NO_VAL && v != INFINITE; }

// GPUs per node are tied to something else Slurm already sized for cons_tres's split (tasks, CPUs, memory).
bool CountsAreTied(const gres_job_state_t* js) {
  return Given(js->gres_per_node) || Given(js->gres_per_task) || Given(js->gres_per_socket) ||
         Given(js->cpus_per_gres) || Given(js->mem_per_gres) || Given(js->def_cpus_per_gres) ||
         Given(js->def_mem_per_gres) || Given(js->ntasks_per_gres);
}

}  // namespace

void ClearGpuSelection(job_record_t* job, uint32_t gpu_plugin_id) {
  ForEachGpuState(job->gres_list_req, gpu_plugin_id, [&](gres_state_t* state) {
    auto* js = static_cast<gres_job_state_t*>(state->gres_data);
    // Counts too: ApplyCoreDecision may have moved them, and cons_tres sets only the nodes it selects.
    if (js->gres_cnt_node_select) std::fill_n(js->gres_cnt_node_select, js->total_node_cnt, uint64_t{0});
    if (!js->gres_bit_select) return;
    for (uint32_t i = 0; i < js->total_node_cnt; ++i) FREE_NULL_BITMAP(js->gres_bit_select[i]);
    xfree(js->gres_bit_select);
  });
}

bool ApplyCoreDecision(job_record_t* job, const PlacementDecision& decision, const bitstr_t* nodes,
                       const ClusterModel& model, uint32_t gpu_plugin_id) {
  gres_job_state_t* js = nullptr;
  int entries = 0;
  ForEachGpuState(job->gres_list_req, gpu_plugin_id, [&](gres_state_t* state) {
    js = static_cast<gres_job_state_t*>(state->gres_data);
    ++entries;
  });
  if (entries != 1 || !js->gres_cnt_node_select || js->total_node_cnt == 0) {
    debug("rackwise: JobId=%u keeps cons_tres's GPU picks (%d gpu entries)", job->job_id, entries);
    return false;
  }
  // cons_tres must have taken exactly the core's nodes; the split between them is ours to set.
  const std::vector<int> taken = BitmapIndices(nodes);
  std::vector<int> planned;
  uint64_t planned_total = 0, taken_total = 0;
  for (const NodeGpus& ng : decision.nodes) {
    planned.push_back(model.ToSlurm(ng.node));
    planned_total += std::popcount(ng.gpus);
  }
  std::sort(planned.begin(), planned.end());
  if (planned.empty()) return false;
  for (int i : taken) taken_total += static_cast<uint32_t>(i) < js->total_node_cnt ? js->gres_cnt_node_select[i] : 0;
  if (planned != taken || planned.back() >= static_cast<int>(js->total_node_cnt)) {
    debug("rackwise: JobId=%u keeps cons_tres's GPU picks (other nodes than the core's)", job->job_id);
    return false;
  }
  const bool may_move_counts = !CountsAreTied(js) && planned_total == taken_total;
  bool exact = true;
  std::vector<std::pair<int, GpuMask>> pins;
  for (const NodeGpus& ng : decision.nodes) {
    const int i = model.ToSlurm(ng.node);
    const uint64_t want = std::popcount(ng.gpus);
    const bool same_count =
        js->gres_cnt_node_select[i] == want && !(js->gres_bit_select && js->gres_bit_select[i] &&
                                                 static_cast<uint64_t>(bit_set_count(js->gres_bit_select[i])) != want);
    const NodeGpuState node = GpuStateOfNode(i, gpu_plugin_id);
    const bool free =
        node.size > 0 && node.size <= kMaxGpusPerNode && (ng.gpus >> node.size) == 0 && !(node.busy & ng.gpus);
    if (!same_count && (!may_move_counts || !free)) {
      if (!may_move_counts && CountsAreTied(js))
        debug("rackwise: JobId=%u GPU counts tied to tasks, CPUs or memory", job->job_id);
      debug("rackwise: JobId=%u keeps cons_tres's GPU split (node %d: %" PRIu64 " given, %" PRIu64 " planned)",
            job->job_id, i, js->gres_cnt_node_select[i], want);
      return false;  // counts stay all cons_tres's or all the core's: the job's total must not change
    }
    if (free) {
      pins.emplace_back(i, ng.gpus);
    } else {
      exact = false;  // same count, other indices: power is the same, rail alignment is lost
    }
  }
  for (const auto& [i, mask] : pins) {
    // gres_ctld copies these into the job's allocation at job_begin (instead of picking the lowest free).
    if (!js->gres_bit_select)
      js->gres_bit_select = static_cast<bitstr_t**>(xcalloc(js->total_node_cnt, sizeof(bitstr_t*)));
    const int size = GpuStateOfNode(i, gpu_plugin_id).size;
    FREE_NULL_BITMAP(js->gres_bit_select[i]);
    js->gres_bit_select[i] = bit_alloc(size);
    for (int g = 0; g < size; ++g) {
      if (mask & (GpuMask{1} << g)) bit_set(js->gres_bit_select[i], g);
    }
    js->gres_cnt_node_select[i] = std::popcount(mask);
  }
  return exact;
}

}  // namespace rackwise::slurm
