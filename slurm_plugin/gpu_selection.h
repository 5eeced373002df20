// SPDX-License-Identifier: GPL-2.0-or-later
// The GPUs a job_test selected (cons_tres's gres_bit_select and gres_cnt_node_select in the job's GRES request),
// dropped before cons_tres runs and made equal to the core's decision where Slurm allows it. Free functions: they
// hold no state, and change only the job record they are given.
//
// Thread safety: called from job_test, under slurmctld's job write lock (the job record's owner) and the select
// plugin's mutex; they read Slurm's node table, which that lock keeps still.
#pragma once

#include <cstdint>

#include "cluster_model.h"
#include "rackwise/placement_decision.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

// Drops every per-node GPU pick of the job's request (ours or a previous try's) before cons_tres runs.
// `gpu_plugin_id`: gres_build_id("gpu").
void ClearGpuSelection(job_record_t* job, uint32_t gpu_plugin_id);

// Makes cons_tres's selection the core's decision (per-node counts and indices) when cons_tres took exactly
// the core's nodes (`nodes`) and Slurm's own node state has the core's indices free; counts are only moved between
// nodes for a per-job GPU count (no per-node, per-task or per-GPU CPU/memory ties). Returns true if the
// selection now equals the decision; otherwise cons_tres's picks stay (and are checked against the caps).
bool ApplyCoreDecision(job_record_t* job, const PlacementDecision& decision, const bitstr_t* nodes,
                       const ClusterModel& model, uint32_t gpu_plugin_id);

}  // namespace rackwise::slurm
