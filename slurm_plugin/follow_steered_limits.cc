// SPDX-License-Identifier: GPL-2.0-or-later
// See follow_steered_limits.h.
#include "follow_steered_limits.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "node_power/node_files.h"
#include "steered_limits.h"
#include "steered_limits_applier.h"

extern char** environ;

namespace rackwise::slurm {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

void Say(const std::string& line) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("%s rackwise: %s\n", when, line.c_str());
  std::fflush(stdout);
}

// Drains `node` through scontrol (a client set up as Slurm expects, as the prolog's drain does).
void Drain(const std::string& scontrol, const std::string& node, const std::string& cause) {
  std::string reason = "rackwise: " + cause;
  if (reason.size() > 400) reason = reason.substr(0, 397) + "...";
  std::string node_arg = "nodename=" + node, reason_arg = "reason=" + reason;
  char update[] = "update", drain[] = "state=drain";
  char* argv[] = {const_cast<char*>(scontrol.c_str()), update, node_arg.data(), drain, reason_arg.data(), nullptr};
  pid_t pid = 0;
  int status = 0;
  if (posix_spawnp(&pid, scontrol.c_str(), nullptr, nullptr, argv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
      !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Say(absl::StrCat("cannot drain ", node, " (", reason, ") through ", scontrol));
  } else {
    Say(absl::StrCat("drained ", node, ": ", reason));
  }
}

std::string NodeName(const JobScriptEnvironment& env) {
  if (!env.node.empty()) return env.node;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  std::string name = host;
  return name.substr(0, name.find('.'));
}

// Says `line` once until it changes (a missing file is not repeated every second).
class Once {
 public:
  void Say(const std::string& line) {
    if (line != last_) slurm::Say(line);
    last_ = line;
  }
  void Clear() { last_.clear(); }

 private:
  std::string last_;
};

// The limits as the file says now, or nullopt (said once) when it cannot be used this round.
std::optional<std::vector<SteeredLimit>> ReadLimits(const std::string& path, Once* problem) {
  absl::StatusOr<std::string> text = node_power::ReadWholeFile(path);
  if (!text.ok()) {
    problem->Say(absl::StrCat("steered limits not read, GPU limits left as they are: ", text.status().message()));
    return std::nullopt;
  }
  absl::StatusOr<std::vector<SteeredLimit>> limits = ParseSteeredLimits(*text, path);
  if (!limits.ok()) {
    problem->Say(absl::StrCat("steered limits not used, GPU limits left as they are: ", limits.status().message()));
    return std::nullopt;
  }
  problem->Clear();
  return *std::move(limits);
}

}  // namespace

int FollowSteeredLimits(JobScriptEnvironment env, const std::string& cache_dir, const FollowOptions& options,
                        const NvmlOpener& open) {
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  env.node = NodeName(env);
  const std::string limits_path = absl::StrReplaceAll(options.limits_path, {{"%n", env.node}});
  const std::string metrics_path = absl::StrReplaceAll(options.metrics_path, {{"%n", env.node}});
  Say(absl::StrCat("following steered GPU limits in ", limits_path, " every ", options.interval_s, " s on node ",
                   env.node));
  SteeredLimitsApplier applier(env.node);
  std::unique_ptr<node_power::GpuPowerControl> control;
  std::string library;  // the one `control` was opened from
  Once problem, nvml_problem;
  const auto interval = std::chrono::duration<double>(options.interval_s);
  for (auto next = std::chrono::steady_clock::now(); !g_stop;
       next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval)) {
    // Read each round: a reloaded description (another NVML library or lease file) holds from the next one.
    const NodeDescription description = LoadNodeDescription(env, cache_dir);
    std::optional<std::vector<SteeredLimit>> limits = ReadLimits(limits_path, &problem);
    if (limits && description.settings.enabled) {
      if (!control || library != description.settings.nvml_library) {
        absl::StatusOr<std::unique_ptr<node_power::GpuPowerControl>> opened = open(description.settings.nvml_library);
        control = opened.ok() ? *std::move(opened) : nullptr;
        library = description.settings.nvml_library;
        if (!opened.ok()) nvml_problem.Say(absl::StrCat("steered limits not applied: ", opened.status().message()));
      }
      if (control) {
        nvml_problem.Clear();
        SteeredLimitsApplier::Round round = applier.Apply(*limits, *control, description.settings.state_file);
        for (const std::string& line : round.log) Say(line);
        for (const std::string& cause : round.drains) Drain(options.scontrol, env.node, cause);
      }
    }
    if (!metrics_path.empty()) {
      if (absl::Status s = node_power::WriteFileAtomically(metrics_path, applier.Metrics(), 0644); !s.ok())
        problem.Say(absl::StrCat("cannot write the metrics: ", s.message()));
    }
    while (!g_stop && std::chrono::steady_clock::now() < next + interval)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Say("stopped following steered GPU limits");
  return 0;
}

}  // namespace rackwise::slurm
