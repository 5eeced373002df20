// SPDX-License-Identifier: GPL-2.0-or-later
// rackwise-slurm-gpu-power prolog|epilog [--cache-dir=DIR]: the GPU power work of spank_rackwise.so's job prolog
// and epilog, in a process of its own (the plugin runs it with the job script's environment; see
// spank_rackwise.cc for why). prolog: holds the job's GPUs on this node to the watts per GPU the select plugin
// counted; epilog: gives the previous limits back. --cache-dir (plugstack.conf's cache_dir=, default
// /var/lib/rackwise, "%n" the node's name) keeps the last rackwise.yaml this node accepted (job_power.h).
// Prints one line (what was done, or why the job must not run here) and exits
//   0  the job may run here (or the limits were restored),
//   1  the job must not run on this node (the plugin drains it with the printed reason),
//   2  bad usage.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "absl/strings/match.h"
#include "job_power.h"
#include "node_power/nvml_library.h"

namespace rackwise::slurm {
namespace {

constexpr char kCacheDirFlag[] = "--cache-dir=";

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

JobScriptEnvironment EnvironmentNow() {
  return {Env("SLURM_JOB_ID"), Env("SLURMD_NODENAME"), Env("SLURM_JOB_GPUS"), Env(kPrologGpuWattsEnv),
          Env("SLURM_CONF")};
}

int Run(const std::string& mode, const std::string& cache_dir) {
  const NvmlOpener open = [](const std::string& library) { return node_power::OpenNvml(library); };
  const JobScriptEnvironment env = EnvironmentNow();
  const JobScriptResult result = mode == "prolog" ? RunProlog(env, cache_dir, open) : RunEpilog(env, cache_dir, open);
  std::printf("%s\n", result.line.c_str());
  return result.exit_code;
}

}  // namespace
}  // namespace rackwise::slurm

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  std::string cache_dir = rackwise::slurm::kDefaultCacheDir;
  bool usage_ok = (mode == "prolog" || mode == "epilog") && argc <= 3;
  if (usage_ok && argc == 3) {
    const std::string flag = argv[2];
    usage_ok = absl::StartsWith(flag, rackwise::slurm::kCacheDirFlag) &&
               flag.size() > sizeof(rackwise::slurm::kCacheDirFlag) - 1;
    if (usage_ok) cache_dir = flag.substr(sizeof(rackwise::slurm::kCacheDirFlag) - 1);
  }
  if (!usage_ok) {
    std::fprintf(stderr,
                 "usage: rackwise-slurm-gpu-power prolog|epilog [--cache-dir=DIR] (run by spank_rackwise.so)\n");
    return 2;
  }
  try {
    return rackwise::slurm::Run(mode, cache_dir);
  } catch (const std::exception& e) {
    std::printf("internal error in rackwise-slurm-gpu-power %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
