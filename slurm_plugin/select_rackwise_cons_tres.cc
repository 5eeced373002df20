// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres: the C ABI Slurm loads (22.05: plugin_id + 36 select_p_* calls; 24.11: + 31;
// plus plugin_name/plugin_type/plugin_version and init/fini; slurm_compat.h has the differences). It loads
// select/cons_tres as an inner plugin and forwards every call; inside slurmctld, RackwiseSelect narrows job_test's
// candidate nodes to the core's decision and keeps the power ledger in step. Clients (squeue, sbatch, ...) load this
// too and only forward.
//
// Nothing may escape into Slurm's C code: every call into C++ is guarded, and an unexpected exception is
// logged and answered the way cons_tres alone would have answered (never fatal()).
//
// This file is part of rackwise; it links against and runs inside Slurm, which is GPL-2.0-or-later, and is
// licensed under the GNU General Public License, version 2 or (at your option) any later version.
#include <exception>
#include <memory>

#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

using rackwise::slurm::JobTestTail;
using rackwise::slurm::RackwiseSelect;
using rackwise::slurm::SlurmList;

// Built with -fvisibility=hidden: what Slurm looks up is made visible in these blocks, and the version
// script (select.map) keeps everything else local.
#pragma GCC visibility push(default)
extern "C" {
// Slurm reads these by name (dlsym); extern "C" gives them external linkage and unmangled names.
extern const char plugin_name[] = "rackwise: topology- and power-aware GPU placement over cons_tres";
extern const char plugin_type[] = "select/rackwise_cons_tres";  // keep "cons_tres" in it: slurmctld tests for it
extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
extern const uint32_t plugin_id = 191;  // unique among select plugins; built-ins use 101-110
}
#pragma GCC visibility pop

namespace {

// The order of slurm_select_ops_t (22.05: src/common/select.h; 24.11: src/interfaces/select.c).
const char* const kSelectSyms[] = {
    "plugin_id",
    "select_p_state_save",
    "select_p_state_restore",
    "select_p_job_init",
    "select_p_node_init",
    "select_p_job_test",
    "select_p_job_begin",
    "select_p_job_ready",
    "select_p_job_expand",
    "select_p_job_resized",
#if !RACKWISE_SLURM_2411
    "select_p_job_signal",
#endif
    "select_p_job_fini",
    "select_p_job_suspend",
    "select_p_job_resume",
    "select_p_step_pick_nodes",
    "select_p_step_start",
    "select_p_step_finish",
    "select_p_select_nodeinfo_pack",
    "select_p_select_nodeinfo_unpack",
    "select_p_select_nodeinfo_alloc",
    "select_p_select_nodeinfo_free",
    "select_p_select_nodeinfo_set_all",
    "select_p_select_nodeinfo_set",
    "select_p_select_nodeinfo_get",
    "select_p_select_jobinfo_alloc",
    "select_p_select_jobinfo_free",
    "select_p_select_jobinfo_set",
    "select_p_select_jobinfo_get",
    "select_p_select_jobinfo_copy",
    "select_p_select_jobinfo_pack",
    "select_p_select_jobinfo_unpack",
#if !RACKWISE_SLURM_2411
    "select_p_select_jobinfo_sprint",
    "select_p_select_jobinfo_xstrdup",
#endif
    "select_p_get_info_from_plugin",
#if !RACKWISE_SLURM_2411
    "select_p_update_node_config",
#endif
    "select_p_reconfigure",
#if !RACKWISE_SLURM_2411
    "select_p_resv_test",
#endif
};
static_assert(sizeof(kSelectSyms) / sizeof(kSelectSyms[0]) == sizeof(slurm_select_ops_t) / sizeof(void*),
              "kSelectSyms must list every member of slurm_select_ops_t");

plugin_context_t* g_inner_context = nullptr;
slurm_select_ops_t g_inner{};
std::unique_ptr<RackwiseSelect> g_rackwise;  // only inside slurmctld

// Runs `fn` (which calls into C++), turning any exception into a log line and `fallback()`.
template <typename Fn, typename Fallback>
auto Guard(const char* where, Fn&& fn, Fallback&& fallback) noexcept -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    error("rackwise: %s: internal error, falling back to cons_tres: %s", where, e.what());
  } catch (...) {
    error("rackwise: %s: unknown internal error, falling back to cons_tres", where);
  }
  try {
    return fallback();
  } catch (...) {
    return decltype(fn())();
  }
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int init(void) {
  return Guard(
      "init",
      [] {
        g_inner_context = plugin_context_create("select", "select/cons_tres", reinterpret_cast<void**>(&g_inner),
                                                const_cast<const char**>(kSelectSyms), sizeof(kSelectSyms));
        if (!g_inner_context) {
          error("rackwise: cannot load the inner plugin select/cons_tres (is it in PluginDir?)");
          return SLURM_ERROR;
        }
        if (running_in_slurmctld()) {
          g_rackwise = std::make_unique<RackwiseSelect>(&g_inner);
          info("rackwise: %s loaded over select/cons_tres", plugin_type);
        }
        return SLURM_SUCCESS;
      },
      [] { return SLURM_ERROR; });
}

int fini(void) {
  return Guard(
      "fini",
      [] {
        g_rackwise.reset();
        int rc = SLURM_SUCCESS;
        if (g_inner_context) rc = plugin_context_destroy(g_inner_context);
        g_inner_context = nullptr;
        return rc;
      },
      [] { return SLURM_ERROR; });
}

int select_p_state_save(char* dir_name) { return g_inner.state_save(dir_name); }
int select_p_state_restore(char* dir_name) { return g_inner.state_restore(dir_name); }
int select_p_job_init(SlurmList jobs) { return g_inner.job_init(jobs); }

int select_p_node_init(void) {
  int rc = g_inner.node_init();
  if (rc != SLURM_SUCCESS || !g_rackwise) return rc;
  // Refusing to start on a bad or disagreeing rackwise.yaml is deliberate (slurmctld logs our reason first).
  return Guard(
      "node_init", [] { return g_rackwise->NodeInit(); }, [] { return SLURM_ERROR; });
}

#if RACKWISE_SLURM_2411
int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                      uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list,
                      resv_exc_t* resv_exc_ptr, will_run_data_t* will_run_ptr) {
  const JobTestTail tail{resv_exc_ptr, will_run_ptr};
#else
int select_p_job_test(job_record_t* job_ptr, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                      uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list,
                      bitstr_t* exc_core_bitmap) {
  const JobTestTail tail{exc_core_bitmap};
#endif
  const auto inner = [&] {
    return rackwise::slurm::CallJobTest(g_inner, job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode,
                                        preemptee_candidates, preemptee_job_list, tail);
  };
  if (!g_rackwise) return inner();
  // A failure of ours must not start jobs around the caps: after an internal error the job waits.
  return Guard(
      "job_test",
      [&] {
        return g_rackwise->JobTest(job_ptr, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                                   preemptee_job_list, tail);
      },
      [] { return SLURM_ERROR; });
}

int select_p_job_begin(job_record_t* job_ptr) { return g_inner.job_begin(job_ptr); }
int select_p_job_ready(job_record_t* job_ptr) { return g_inner.job_ready(job_ptr); }

int select_p_job_expand(job_record_t* from_job_ptr, job_record_t* to_job_ptr) {
  int rc = g_inner.job_expand(from_job_ptr, to_job_ptr);
  if (g_rackwise) {
    Guard(
        "job_expand",
        [&] {
          g_rackwise->JobGone(from_job_ptr);
          g_rackwise->JobChanged(to_job_ptr);
          return 0;
        },
        [] { return 0; });
  }
  return rc;
}

int select_p_job_resized(job_record_t* job_ptr, node_record_t* node_ptr) {
  int rc = g_inner.job_resized(job_ptr, node_ptr);
  if (g_rackwise)
    Guard(
        "job_resized",
        [&] {
          g_rackwise->JobChanged(job_ptr);
          return 0;
        },
        [] { return 0; });
  return rc;
}

#if !RACKWISE_SLURM_2411
int select_p_job_signal(job_record_t* job_ptr, int signal) { return g_inner.job_signal(job_ptr, signal); }
#endif

int select_p_job_fini(job_record_t* job_ptr) {
  int rc = g_inner.job_fini(job_ptr);
  if (g_rackwise)
    Guard(
        "job_fini",
        [&] {
          g_rackwise->JobFinished(job_ptr);
          return 0;
        },
        [] { return 0; });
  return rc;
}

int select_p_job_suspend(job_record_t* job_ptr, bool indf_susp) {
  int rc = g_inner.job_suspend(job_ptr, indf_susp);
  // Only an indefinite suspend (scontrol suspend) gives the GPUs back; gang scheduling keeps them.
  if (g_rackwise && indf_susp)
    Guard(
        "job_suspend",
        [&] {
          g_rackwise->JobGone(job_ptr);
          return 0;
        },
        [] { return 0; });
  return rc;
}

int select_p_job_resume(job_record_t* job_ptr, bool indf_susp) {
  int rc = g_inner.job_resume(job_ptr, indf_susp);
  if (g_rackwise && indf_susp) {
    Guard(
        "job_resume",
        [&] {
          g_rackwise->JobChanged(job_ptr);
          return 0;
        },
        [] { return 0; });
  }
  return rc;
}

bitstr_t* select_p_step_pick_nodes(job_record_t* job_ptr, select_jobinfo_t* jobinfo, uint32_t node_count,
                                   bitstr_t** avail_nodes) {
  return g_inner.step_pick_nodes(job_ptr, jobinfo, node_count, avail_nodes);
}
int select_p_step_start(step_record_t* step_ptr) { return g_inner.step_start(step_ptr); }
int select_p_step_finish(step_record_t* step_ptr, bool killing_step) {
  return g_inner.step_finish(step_ptr, killing_step);
}

int select_p_select_nodeinfo_pack(select_nodeinfo_t* nodeinfo, buf_t* buffer, uint16_t protocol_version) {
  return g_inner.nodeinfo_pack(nodeinfo, buffer, protocol_version);
}
int select_p_select_nodeinfo_unpack(select_nodeinfo_t** nodeinfo, buf_t* buffer, uint16_t protocol_version) {
  return g_inner.nodeinfo_unpack(nodeinfo, buffer, protocol_version);
}
select_nodeinfo_t* select_p_select_nodeinfo_alloc(void) { return g_inner.nodeinfo_alloc(); }
int select_p_select_nodeinfo_free(select_nodeinfo_t* nodeinfo) { return g_inner.nodeinfo_free(nodeinfo); }
int select_p_select_nodeinfo_set_all(void) { return g_inner.nodeinfo_set_all(); }

int select_p_select_nodeinfo_set(job_record_t* job_ptr) {
  int rc = g_inner.nodeinfo_set(job_ptr);
  // A job started, or was recovered after a restart: charge its GPUs to the ledger (idempotent).
  if (g_rackwise)
    Guard(
        "nodeinfo_set",
        [&] {
          g_rackwise->JobRunning(job_ptr);
          return 0;
        },
        [] { return 0; });
  return rc;
}

int select_p_select_nodeinfo_get(select_nodeinfo_t* nodeinfo, enum select_nodedata_type dinfo, enum node_states state,
                                 void* data) {
  return g_inner.nodeinfo_get(nodeinfo, dinfo, state, data);
}

select_jobinfo_t* select_p_select_jobinfo_alloc(void) { return g_inner.jobinfo_alloc(); }
int select_p_select_jobinfo_free(select_jobinfo_t* jobinfo) { return g_inner.jobinfo_free(jobinfo); }
int select_p_select_jobinfo_set(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data) {
  return g_inner.jobinfo_set(jobinfo, data_type, data);
}
int select_p_select_jobinfo_get(select_jobinfo_t* jobinfo, enum select_jobdata_type data_type, void* data) {
  return g_inner.jobinfo_get(jobinfo, data_type, data);
}
select_jobinfo_t* select_p_select_jobinfo_copy(select_jobinfo_t* jobinfo) { return g_inner.jobinfo_copy(jobinfo); }
int select_p_select_jobinfo_pack(select_jobinfo_t* jobinfo, buf_t* buffer, uint16_t protocol_version) {
  return g_inner.jobinfo_pack(jobinfo, buffer, protocol_version);
}
int select_p_select_jobinfo_unpack(select_jobinfo_t** jobinfo, buf_t* buffer, uint16_t protocol_version) {
  return g_inner.jobinfo_unpack(jobinfo, buffer, protocol_version);
}
#if !RACKWISE_SLURM_2411
char* select_p_select_jobinfo_sprint(select_jobinfo_t* jobinfo, char* buf, size_t size, int mode) {
  return g_inner.jobinfo_sprint(jobinfo, buf, size, mode);
}
char* select_p_select_jobinfo_xstrdup(select_jobinfo_t* jobinfo, int mode) {
  return g_inner.jobinfo_xstrdup(jobinfo, mode);
}
#endif

int select_p_get_info_from_plugin(enum select_plugindata_info dinfo, job_record_t* job_ptr, void* data) {
  return g_inner.get_info_from_plugin(dinfo, job_ptr, data);
}
#if !RACKWISE_SLURM_2411
int select_p_update_node_config(int index) { return g_inner.update_node_config(index); }
#endif

int select_p_reconfigure(void) {
  int rc = g_inner.reconfigure();
  // A bad rackwise.yaml keeps the previous one (logged); caps lowered in the file apply at once.
  if (g_rackwise)
    Guard(
        "reconfigure",
        [] {
          g_rackwise->Reconfigure();
          return 0;
        },
        [] { return 0; });
  return rc;
}

#if !RACKWISE_SLURM_2411
bitstr_t* select_p_resv_test(resv_desc_msg_t* resv_desc_ptr, uint32_t node_cnt, bitstr_t* avail_bitmap,
                             bitstr_t** core_bitmap) {
  return g_inner.resv_test(resv_desc_ptr, node_cnt, avail_bitmap, core_bitmap);
}
#endif

}  // extern "C"
#pragma GCC visibility pop
