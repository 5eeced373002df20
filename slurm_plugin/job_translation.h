// SPDX-License-Identifier: GPL-2.0-or-later
// The select plugin's translation between Slurm's records and the core's vocabulary, apart from the plugin's
// state so that it can be tested on records built in memory (job_translation_test.cc, against Slurm's headers
// and libslurm, no daemon): what a job asks for (its GRES request as GPUs and GPUs per node, its rackwise options,
// how long it has waited, the nodes Slurm offers), and which GPUs a job test selected or a running job holds.
// Facts only: no placement rule here (the Placer decides).
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <vector>

#include "cluster_model.h"
#include "rackwise/allocation.h"
#include "rackwise/placement_request.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

// A job's GPUs as its GRES request states them.
struct GpuAsk {
  int gpus = 0;
  int gpus_per_node = 0;
  bool translated = true;  // false: a form the core does not model (gpus per socket, counts that do not divide,
                           // absurd sizes); cons_tres decides, the ledger still checks power
};

// `gpu_plugin_id`: gres_build_id("gpu"). --gpus (per job), --gpus-per-node (times -N), --gpus-per-task (times
// -n, per node with --ntasks-per-node); per socket is not translated.
GpuAsk ReadGpuAsk(const job_record_t* job, uint32_t gpu_plugin_id);

// The watts per GPU the job declared (--gpu-watts through the SPANK plugin), 0 when none or malformed.
Milliwatts JobWatts(const job_record_t* job);

// The core's request: the ask, the job's options, how long it has waited at `now` (since submit or begin time),
// and the described nodes among those Slurm offers in `bitmap` (only the -w nodes when the job names as many as
// it needs). Malformed options are logged and left out (the policy's defaults apply).
// `every_usable` (optional, Slurm node indices, the size of `bitmap`): the described nodes the ledger holds up.
// When Slurm offers all of them, the request names no nodes: the core could use no other node anyway (it keeps
// down and drained nodes out itself), and a request for every node costs nothing per node, where a list of the
// offered ones costs a pass over them in the face and in the core.
// nullopt: Slurm offers no described node the job may use (only nodes rackwise does not know), so the job is not
// the core's to place. An empty `allowed_nodes` in a returned request means every node, never "none": the two
// must not be confused, or a job offered every node would bypass the core.
std::optional<PlacementRequest> MakeRequest(const job_record_t* job, const GpuAsk& ask, const bitstr_t* bitmap,
                                            const ClusterModel& model, time_t now,
                                            const bitstr_t* every_usable = nullptr);

// The nodes a `preferred` job's wait for its fewest domains is estimated over: every node it may ever use, busy
// or not, where Slurm's offer holds only the nodes usable now. The job's own restrictions stay: the nodes it
// names with -w when they are enough, else its partition less the nodes it excludes (the request's
// eligible_nodes); with node features, which only slurmctld evaluates, the offered nodes. Empty: every node;
// nullopt: the nodes it names are none of the described ones (nothing to wait for).
std::optional<std::vector<NodeId>> NodesToWaitFor(const job_record_t* job, const PlacementRequest& request,
                                                  const ClusterModel& model);

// The GPUs a RUN_NOW job test selected on `nodes` (gres_bit_select, or gres_cnt_node_select counted onto the
// lowest GPUs the ledger has free). nullopt: none on a described node.
std::optional<Allocation> SelectedGpus(const job_record_t* job, const bitstr_t* nodes, const ClusterModel& model,
                                       uint32_t gpu_plugin_id);

// The GPUs an allocated job holds (gres_list_alloc over its node_bitmap), nodes in id order.
std::optional<Allocation> AllocatedGpus(const job_record_t* job, const ClusterModel& model, uint32_t gpu_plugin_id);

}  // namespace rackwise::slurm
