// SPDX-License-Identifier: GPL-2.0-or-later
// Small readers of Slurm's job, node and GRES records shared by the select plugin's files: node bitmaps as
// index lists, GRES bitmaps as GpuMasks, the GPU entries of a GRES list, a node's health.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/topology.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

inline std::string JobId(const job_record_t* job) { return std::to_string(job->job_id); }

// Slurm index of the j-th node of a job's node bitmap, for every j.
inline std::vector<int> BitmapIndices(const bitstr_t* bitmap) {
  std::vector<int> out;
  if (!bitmap) return out;
  const int first = bit_ffs(const_cast<bitstr_t*>(bitmap));
  if (first < 0) return out;
  const int last = bit_fls(const_cast<bitstr_t*>(bitmap));
  for (int i = first; i <= last; ++i) {
    if (bit_test(const_cast<bitstr_t*>(bitmap), i)) out.push_back(i);
  }
  return out;
}

inline GpuMask BitsToMask(bitstr_t* bits) {
  GpuMask mask = 0;
  if (!bits) return mask;
  const int size = std::min<int>(bit_size(bits), kMaxGpusPerNode);
  for (int g = 0; g < size; ++g) {
    if (bit_test(bits, g)) mask |= GpuMask{1} << g;
  }
  return mask;
}

// The lowest `count` GPUs of `free`: used when GRES are counted without device files, so that the ledger
// still sees distinct GPUs.
inline GpuMask LowestBits(GpuMask free, uint64_t count) {
  return LowestGpus(free, static_cast<int64_t>(std::min<uint64_t>(count, kMaxGpusPerNode)));
}

template <typename Fn>
void ForEachGpuState(SlurmList list, uint32_t gpu_id, Fn&& fn) {
  if (!list) return;
  SlurmListIterator it = list_iterator_create(list);
  while (gres_state_t* state = static_cast<gres_state_t*>(list_next(it))) {
    if (state->plugin_id == gpu_id && state->gres_data) fn(state);
  }
  list_iterator_destroy(it);
}

// A powered-down node (Slurm's power saving) is usable: Slurm offers it last and resumes it once it holds a
// job, so counting it as down would leave a job that only it can hold pending for ever. The ledger keeps
// counting its idle watts (docs/design.md's power model), so its power comes back with it.
inline NodeHealth HealthOf(const node_record_t* node) {
  if (IS_NODE_DOWN(node) || IS_NODE_FAIL(node) || IS_NODE_NO_RESPOND(node) || IS_NODE_FUTURE(node)) {
    return NodeHealth::kDown;
  }
  if (IS_NODE_DRAIN(node)) return NodeHealth::kDrained;
  return NodeHealth::kUp;
}

}  // namespace rackwise::slurm
