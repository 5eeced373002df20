// SPDX-License-Identifier: GPL-2.0-or-later
// spank_rackwise.so: adds `--nvlink=required|preferred|none` and `--gpu-watts=N` to sbatch, srun and salloc.
// Values are checked where the user types them (a bad value fails the submission with a message) and are
// stored in the job's spank_job_env as RACKWISE_NVLINK / RACKWISE_GPU_WATTS, which slurmctld keeps with the
// job; select/rackwise_cons_tres reads them back from there. Defaults and limits are the administrator's, in
// rackwise.yaml's policy block.
//
// Licensed under the GNU General Public License, version 2 or (at your option) any later version, like the
// Slurm it runs inside.
#include <exception>
#include <string>

#include "job_options.h"

extern "C" {  // spank.h declares the plugin entry points without C linkage of its own
#include <slurm/spank.h>
}

namespace {

std::string g_nvlink;     // validated value, empty when not given
std::string g_gpu_watts;  // validated value, empty when not given

int OnNvlink(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<rackwise::Locality> locality = rackwise::slurm::ParseNvlink(optarg ? optarg : "");
    if (!locality.ok()) {
      slurm_error("rackwise: %s", std::string(locality.status().message()).c_str());
      return -1;
    }
    g_nvlink = rackwise::slurm::LocalityName(*locality);
    return 0;
  } catch (...) {
    slurm_error("rackwise: --nvlink: internal error");
    return -1;
  }
}

int OnGpuWatts(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<double> watts = rackwise::slurm::ParseGpuWatts(optarg ? optarg : "");
    if (!watts.ok()) {
      slurm_error("rackwise: %s", std::string(watts.status().message()).c_str());
      return -1;
    }
    g_gpu_watts = optarg;
    return 0;
  } catch (...) {
    slurm_error("rackwise: --gpu-watts: internal error");
    return -1;
  }
}

struct spank_option g_options[] = {
    {const_cast<char*>("nvlink"), const_cast<char*>("required|preferred|none"),
     const_cast<char*>("rackwise: keep the job in the fewest NVLink domains (required: wait for them; "
                       "preferred: start spread out if it must; none: fill fragments)"),
     1, 0, OnNvlink},
    {const_cast<char*>("gpu-watts"), const_cast<char*>("N"),
     const_cast<char*>("rackwise: watts each of the job's GPUs draws (default: the node type's full-load draw)"), 1, 1,
     OnGpuWatts},
};

}  // namespace

// Built with -fvisibility=hidden: what Slurm looks up is made visible here, and the version script
// (spank.map) keeps everything else local.
#pragma GCC visibility push(default)
extern "C" {

extern const char plugin_name[] = "rackwise";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av) {
  for (struct spank_option& option : g_options) {
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
      slurm_error("rackwise: cannot register --%s", option.name);
      return -1;
    }
  }
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
  if (!g_nvlink.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kNvlinkEnv, g_nvlink.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --nvlink to the job");
    return -1;
  }
  if (!g_gpu_watts.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kGpuWattsEnv, g_gpu_watts.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --gpu-watts to the job");
    return -1;
  }
  return 0;
}

}  // extern "C"
#pragma GCC visibility pop
