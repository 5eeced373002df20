// SPDX-License-Identifier: GPL-2.0-or-later
// rackwise-slurm-gpu-power prolog|epilog|accept [--cache-dir=DIR] [--node=NAME] [--slurm-conf=PATH]: the GPU
// power work of spank_rackwise.so's job prolog and epilog, in a process of its own (the plugin runs it with the
// job script's environment; see spank_rackwise.cc for why). prolog: holds the job's GPUs on this node to the
// watts per GPU the select plugin counted; epilog: gives the previous limits back; accept (slurmd's start):
// keeps rackwise.yaml as the node's accepted copy. --cache-dir (plugstack.conf's cache_dir=, default
// /var/lib/rackwise, "%n" the node's name) keeps the last rackwise.yaml this node accepted (job_power.h).
// --node and --slurm-conf stand in for SLURMD_NODENAME and SLURM_CONF where slurmd sets neither (its start).
// follow --limits=PATH [--interval=SECONDS] [--metrics=PATH] [--scontrol=PATH] (and the flags above): power
// steering's node service (follow_steered_limits.h), run as a daemon on each node; it stops on SIGTERM or SIGINT.
// prolog, epilog and accept print one line (what was done, or why the job must not run here) and exit
//   0  the job may run here (or the limits were restored; accept always),
//   1  the job must not run on this node (the plugin drains it with the printed reason),
//   2  bad usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "follow_steered_limits.h"
#include "job_power.h"
#include "node_power/nvml_library.h"

namespace rackwise::slurm {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

JobScriptEnvironment EnvironmentNow() {
  return {Env("SLURM_JOB_ID"), Env("SLURMD_NODENAME"), Env("SLURM_JOB_GPUS"), Env(kPrologGpuWattsEnv),
          Env("SLURM_CONF")};
}

// What the command line says: the mode and the flags that override the environment.
struct CommandLine {
  std::string mode;
  std::string cache_dir = kDefaultCacheDir;
  std::string node;
  std::string slurm_conf;
  FollowOptions follow;  // mode follow
};

std::optional<CommandLine> Parse(int argc, char** argv) {
  CommandLine out;
  if (argc < 2) return std::nullopt;
  out.mode = argv[1];
  if (out.mode != "prolog" && out.mode != "epilog" && out.mode != "accept" && out.mode != "follow") return std::nullopt;
  std::string interval;
  const std::pair<const char*, std::string*> flags[] = {{"--cache-dir=", &out.cache_dir},
                                                        {"--node=", &out.node},
                                                        {"--slurm-conf=", &out.slurm_conf},
                                                        {"--limits=", &out.follow.limits_path},
                                                        {"--metrics=", &out.follow.metrics_path},
                                                        {"--scontrol=", &out.follow.scontrol},
                                                        {"--interval=", &interval}};
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    bool known = false;
    for (const auto& [flag, value] : flags) {
      if (!absl::StartsWith(arg, flag) || arg.size() == std::strlen(flag)) continue;
      *value = arg.substr(std::strlen(flag));
      known = true;
    }
    if (!known) return std::nullopt;
  }
  if (out.mode == "follow") {
    if (out.follow.limits_path.empty()) return std::nullopt;
    if (!interval.empty() && (!absl::SimpleAtod(interval, &out.follow.interval_s) || !(out.follow.interval_s >= 0.1) ||
                              out.follow.interval_s > 3600))
      return std::nullopt;
  } else if (!out.follow.limits_path.empty() || !out.follow.metrics_path.empty() || !interval.empty() ||
             out.follow.scontrol != "scontrol") {
    return std::nullopt;
  }
  return out;
}

int Run(const CommandLine& command) {
  const NvmlOpener open = [](const std::string& library) { return node_power::OpenNvml(library); };
  JobScriptEnvironment env = EnvironmentNow();
  if (!command.node.empty()) env.node = command.node;
  if (!command.slurm_conf.empty()) env.slurm_conf = command.slurm_conf;
  if (command.mode == "follow") return FollowSteeredLimits(env, command.cache_dir, command.follow, open);
  JobScriptResult result;
  if (command.mode == "prolog") {
    result = RunProlog(env, command.cache_dir, open);
  } else if (command.mode == "epilog") {
    result = RunEpilog(env, command.cache_dir, open);
  } else {
    result = RunAccept(env, command.cache_dir);
  }
  std::printf("%s\n", result.line.c_str());
  return result.exit_code;
}

}  // namespace
}  // namespace rackwise::slurm

int main(int argc, char** argv) {
  const std::optional<rackwise::slurm::CommandLine> command = rackwise::slurm::Parse(argc, argv);
  if (!command) {
    std::fprintf(stderr,
                 "usage: rackwise-slurm-gpu-power prolog|epilog|accept [--cache-dir=DIR] [--node=NAME] "
                 "[--slurm-conf=PATH] (run by spank_rackwise.so)\n"
                 "       rackwise-slurm-gpu-power follow --limits=PATH [--interval=SECONDS (0.1-3600, default 1)] "
                 "[--metrics=PATH] [--scontrol=PATH] [--node=NAME] [--slurm-conf=PATH] [--cache-dir=DIR]\n");
    return 2;
  }
  try {
    return rackwise::slurm::Run(*command);
  } catch (const std::exception& e) {
    std::printf("internal error in rackwise-slurm-gpu-power %s: %s\n", command->mode.c_str(), e.what());
    return command->mode == "accept" ? 0 : 1;
  }
}
