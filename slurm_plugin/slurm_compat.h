// SPDX-License-Identifier: GPL-2.0-or-later
// The differences between the Slurm versions the plugins build against (22.05 and 24.11), keyed on
// SLURM_VERSION_NUMBER, so that one source serves both. Included by slurm_headers.h after Slurm's headers.
//
//   item                       22.05                                  24.11
//   lists                      List / ListIterator                    list_t * / list_itr_t *
//   select ops table           slurm_select_ops_t in select.h         private to select.c (layout copied here)
//   select_p_job_test          ..., bitstr_t *exc_core_bitmap         ..., resv_exc_t *, will_run_data_t *
//   removed entry points       -                                      job_signal, jobinfo_sprint/xstrdup,
//                                                                     update_node_config, resv_test
//   job details                struct job_details                     job_details_t
//   pending reason with text   WAIT_BLOCK_D_ACTION (kept by           none: select_nodes() clears state_desc
//                              select_nodes())                        (pending_reasons.h puts it back)
#pragma once

namespace rackwise::slurm {

#define RACKWISE_SLURM_2411 (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))

#if RACKWISE_SLURM_2411
using SlurmList = list_t*;
using SlurmListIterator = list_itr_t*;
using JobDetails = job_details_t;
// The trailing arguments of select_p_job_test, passed through untouched.
struct JobTestTail {
  resv_exc_t* resv_exc_ptr;
  will_run_data_t* will_run_ptr;
};
// select_nodes() clears state_desc for every code; WAIT_RESOURCES is what it leaves, and the plugin puts its
// text back once select_nodes() is done (pending_reasons.h).
inline constexpr job_state_reason kPendingReason = WAIT_RESOURCES;
inline constexpr bool kReasonSurvivesSelectNodes = false;
#else
using SlurmList = List;
using SlurmListIterator = ListIterator;
using JobDetails = struct job_details;
struct JobTestTail {
  bitstr_t* exc_core_bitmap;
};
// The reason code whose state_desc slurmctld leaves alone when job_test fails; squeue -o %r shows the text.
inline constexpr job_state_reason kPendingReason = WAIT_BLOCK_D_ACTION;
inline constexpr bool kReasonSurvivesSelectNodes = true;
#endif

}  // namespace rackwise::slurm

#if RACKWISE_SLURM_2411
// The layout of slurm_select_ops_t in 24.11's src/interfaces/select.c (private there). The order must match
// kSelectSyms in select_rackwise_cons_tres.cc, which a static_assert checks by size.
typedef struct {
  uint32_t* plugin_id;
  int (*state_save)(char* dir_name);
  int (*state_restore)(char* dir_name);
  int (*job_init)(list_t* job_list);
  int (*node_init)(void);
  int (*job_test)(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
                  uint16_t mode, list_t* preeemptee_candidates, list_t** preemptee_job_list, resv_exc_t* resv_exc_ptr,
                  will_run_data_t* will_run_ptr);
  int (*job_begin)(job_record_t* job_ptr);
  int (*job_ready)(job_record_t* job_ptr);
  int (*job_expand)(job_record_t* from_job_ptr, job_record_t* to_job_ptr);
  int (*job_resized)(job_record_t* job_ptr, node_record_t* node_ptr);
  int (*job_fini)(job_record_t* job_ptr);
  int (*job_suspend)(job_record_t* job_ptr, bool indf_susp);
  int (*job_resume)(job_record_t* job_ptr, bool indf_susp);
  bitstr_t* (*step_pick_nodes)(job_record_t* job_ptr, select_jobinfo_t* step_jobinfo, uint32_t node_count,
                               bitstr_t** avail_nodes);
  int (*step_start)(step_record_t* step_ptr);
  int (*step_finish)(step_record_t* step_ptr, bool killing_step);
  int (*nodeinfo_pack)(select_nodeinfo_t* nodeinfo, buf_t* buffer, uint16_t protocol_version);
  int (*nodeinfo_unpack)(select_nodeinfo_t** nodeinfo, buf_t* buffer, uint16_t protocol_version);
  select_nodeinfo_t* (*nodeinfo_alloc)(void);
  int (*nodeinfo_free)(select_nodeinfo_t* nodeinfo);
  int (*nodeinfo_set_all)(void);
  int (*nodeinfo_set)(job_record_t* job_ptr);
  int (*nodeinfo_get)(select_nodeinfo_t* nodeinfo, enum select_nodedata_type dinfo, enum node_states state, void* data);
  select_jobinfo_t* (*jobinfo_alloc)(void);
  int (*jobinfo_free)(select_jobinfo_t* jobinfo);
  int (*jobinfo_set)(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data);
  int (*jobinfo_get)(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data);
  select_jobinfo_t* (*jobinfo_copy)(select_jobinfo_t* jobinfo);
  int (*jobinfo_pack)(select_jobinfo_t* jobinfo, buf_t* buffer, uint16_t protocol_version);
  int (*jobinfo_unpack)(select_jobinfo_t** jobinfo_pptr, buf_t* buffer, uint16_t protocol_version);
  int (*get_info_from_plugin)(enum select_plugindata_info dinfo, job_record_t* job_ptr, void* data);
  int (*reconfigure)(void);
} slurm_select_ops_t;
#endif

namespace rackwise::slurm {

// The inner plugin's job_test with this version's trailing arguments.
inline int CallJobTest(const slurm_select_ops_t& ops, job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes,
                       uint32_t max_nodes, uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                       SlurmList* preemptee_job_list, const JobTestTail& tail) {
#if RACKWISE_SLURM_2411
  return ops.job_test(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list,
                      tail.resv_exc_ptr, tail.will_run_ptr);
#else
  return ops.job_test(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list,
                      tail.exc_core_bitmap);
#endif
}

}  // namespace rackwise::slurm
