// SPDX-License-Identifier: GPL-2.0-or-later
// The job prolog's and epilog's view of a job's GPU power, and the description they work with. See job_power.h.
#include "job_power.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "job_options.h"
#include "node_power/node_files.h"
#include "node_power/nvml_library.h"
#include "rackwise/cluster_description.h"

namespace rackwise::slurm {
namespace {

constexpr char kAcceptedCopyName[] = "rackwise.last-accepted.yaml";

// The job's id, GPUs and declared watts; `type` (null: not known) bounds the GPU indices and gives the count
// of an undeclared job.
absl::StatusOr<std::optional<node_power::JobGpuPower>> ParseJob(const JobScriptEnvironment& env, const NodeType* type) {
  uint32_t job = 0;
  if (!absl::SimpleAtoi(env.job_id, &job)) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_JOB_ID '", env.job_id, "' is not a job id"));
  }
  if (env.job_gpus.empty()) return std::nullopt;
  node_power::JobGpuPower power;
  power.owner = LeaseOwner(env.job_id);
  for (absl::string_view item : absl::StrSplit(env.job_gpus, ',')) {
    int gpu = -1;
    if (!absl::SimpleAtoi(item, &gpu) || gpu < 0 || (type != nullptr && gpu >= type->gpus)) {
      return absl::InvalidArgumentError(absl::StrCat("SLURM_JOB_GPUS '", env.job_gpus, "': '", std::string(item),
                                                     "' is not a GPU of ", env.node,
                                                     type != nullptr ? absl::StrCat(" (", type->gpus, " GPUs)") : ""));
    }
    power.gpus.push_back(gpu);
  }
  if (type != nullptr) power.counted_mw = type->per_gpu;
  if (!env.gpu_watts.empty()) {
    absl::StatusOr<double> watts = ParseGpuWatts(env.gpu_watts);
    if (!watts.ok()) return watts.status();
    power.counted_mw = WattsToMilliwatts(*watts);
  }
  power.declared = power.counted_mw != (type != nullptr ? std::optional<int64_t>(type->per_gpu) : std::nullopt);
  return power;
}

// A description read and built, or why not ("FILE:LINE: what is wrong").
struct Loaded {
  std::string text;
  v1::PowerEnforcement enforcement;
  std::shared_ptr<const Topology> topology;
};
absl::StatusOr<Loaded> Load(const std::string& path) {
  absl::StatusOr<std::string> text = node_power::ReadWholeFile(path);
  if (!text.ok()) return text.status();
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = ParseClusterDescription(*text, path, &diagnostics);
  if (!description.ok()) {
    return diagnostics.empty() ? description.status() : absl::InvalidArgumentError(diagnostics.front().ToString());
  }
  absl::StatusOr<Topology> topology = Topology::Build(*description);
  if (!topology.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", topology.status().message()));
  return Loaded{*std::move(text), description->power_enforcement(),
                std::make_shared<const Topology>(*std::move(topology))};
}

// Keeps `text` as the accepted copy unless it already is. Returns a note when it cannot.
std::string KeepAcceptedCopy(const std::string& text, const std::string& copy) {
  absl::StatusOr<std::string> kept = node_power::ReadWholeFile(copy);
  if (kept.ok() && *kept == text) return "";
  absl::Status saved = copy[0] != '/' ? absl::InvalidArgumentError("cache_dir must be an absolute path")
                                      : node_power::MakeTrustedDirectory(node_power::DirectoryOf(copy));
  if (saved.ok()) saved = node_power::WriteFileAtomically(copy, text, 0644);
  if (saved.ok()) return "";
  return absl::StrCat("cannot keep the description as the last one this node accepted (", copy, "): ", saved.message());
}

// Two parts of the printed line, either possibly empty. A refusal passes its cause first: the plugin cuts a
// drain reason at 400 characters, and the note about the description can be long.
std::string Joined(const std::string& first, const std::string& second) {
  return first.empty() ? second : second.empty() ? first : absl::StrCat(first, "; ", second);
}

node_power::JobPowerEnforcer EnforcerFor(const EnforcementSettings& settings, const NvmlOpener& open) {
  const std::string library = settings.nvml_library;
  return node_power::JobPowerEnforcer([library, open] { return open(library); }, settings.state_file);
}

}  // namespace

EnforcementSettings SettingsFor(const v1::PowerEnforcement& enforcement, const std::string& node) {
  EnforcementSettings settings;
  settings.enabled = enforcement.mode() != v1::POWER_LIMIT_MODE_DISABLED;
  const std::string library =
      enforcement.nvml_library().empty() ? node_power::kDefaultNvmlLibrary : enforcement.nvml_library();
  const std::string dir = enforcement.state_dir().empty() ? kDefaultStateDir : enforcement.state_dir();
  settings.nvml_library = absl::StrReplaceAll(library, {{"%n", node}});
  settings.state_dir = absl::StrReplaceAll(dir, {{"%n", node}});
  settings.state_file = settings.state_dir + "/gpu-power-limits";
  return settings;
}

std::string DescriptionPathBeside(const std::string& slurm_conf) {
  const std::string conf = slurm_conf.empty() ? "/etc/slurm/slurm.conf" : slurm_conf;
  const std::string::size_type slash = conf.rfind('/');
  return slash == std::string::npos ? "rackwise.yaml" : conf.substr(0, slash + 1) + "rackwise.yaml";
}

std::string LeaseOwner(const std::string& job_id) { return "slurm-job-" + job_id; }

absl::StatusOr<std::optional<node_power::JobGpuPower>> JobGpuPowerOn(const Topology& topology,
                                                                     const JobScriptEnvironment& env) {
  const std::optional<NodeId> node = topology.FindNode(env.node);
  if (node) return ParseJob(env, &topology.type_of(*node));
  // A node the description does not list: nothing was counted here, only the job id is checked.
  absl::StatusOr<std::optional<node_power::JobGpuPower>> id = ParseJob({env.job_id, env.node, "", "", ""}, nullptr);
  return id.ok() ? std::nullopt : id;
}

absl::StatusOr<std::optional<node_power::JobGpuPower>> JobGpuPowerCarried(const JobScriptEnvironment& env) {
  return ParseJob(env, nullptr);
}

std::string AcceptedCopyPath(const std::string& cache_dir, const std::string& node) {
  const std::string dir = absl::StrReplaceAll(cache_dir.empty() ? kDefaultCacheDir : cache_dir, {{"%n", node}});
  return absl::StrCat(dir, "/", kAcceptedCopyName);
}

NodeDescription LoadNodeDescription(const JobScriptEnvironment& env, const std::string& cache_dir) {
  const std::string path = DescriptionPathBeside(env.slurm_conf);
  const std::string copy = AcceptedCopyPath(cache_dir, env.node);
  NodeDescription used;
  absl::StatusOr<Loaded> loaded = Load(path);
  if (loaded.ok()) {
    used.file = path;
    used.note = KeepAcceptedCopy(loaded->text, copy);
  } else {
    used.note = absl::StrCat("rackwise.yaml rejected (", loaded.status().message(), ")");
    loaded = Load(copy);
    if (loaded.ok()) {
      used.file = copy;
      absl::StrAppend(&used.note, "; using the last description this node accepted, ", copy);
    } else {
      absl::StrAppend(&used.note, "; no description this node accepted (", loaded.status().message(),
                      "): default power_enforcement settings and the watts the job declared");
    }
  }
  used.settings = SettingsFor(loaded.ok() ? loaded->enforcement : v1::PowerEnforcement(), env.node);
  if (loaded.ok()) used.topology = loaded->topology;
  return used;
}

JobScriptResult RunAccept(const JobScriptEnvironment& env, const std::string& cache_dir) {
  const NodeDescription used = LoadNodeDescription(env, cache_dir);
  if (used.file.empty() || used.file == AcceptedCopyPath(cache_dir, env.node)) return {0, used.note};
  return {0, Joined(absl::StrCat("accepted ", used.file), used.note)};
}

JobScriptResult RunProlog(const JobScriptEnvironment& env, const std::string& cache_dir, const NvmlOpener& open) {
  const NodeDescription used = LoadNodeDescription(env, cache_dir);
  absl::StatusOr<std::optional<node_power::JobGpuPower>> job =
      used.topology ? JobGpuPowerOn(*used.topology, env) : JobGpuPowerCarried(env);
  if (!job.ok()) return {1, Joined(std::string(job.status().message()), used.note)};
  if (!*job) return {0, used.note};
  if (!used.settings.enabled) {
    // No limit is set, but a GPU left limited by an earlier job is still given back (or refused) first.
    (*job)->counted_mw = std::nullopt;
    (*job)->declared = false;
  } else if (absl::Status made = node_power::MakeTrustedDirectory(used.settings.state_dir); !made.ok()) {
    const std::string source = used.file.empty() ? "default settings" : used.file;
    return {1, Joined(absl::StrCat(source, ": power_enforcement.state_dir: ", made.message()), used.note)};
  }
  absl::StatusOr<std::string> started = EnforcerFor(used.settings, open).Start(**job);
  if (!started.ok()) return {1, Joined(std::string(started.status().message()), used.note)};
  return {0, Joined(used.note, used.settings.enabled || *started != node_power::kNoLimitSet ? *started : "")};
}

JobScriptResult RunEpilog(const JobScriptEnvironment& env, const std::string& cache_dir, const NvmlOpener& open) {
  // Only the lease file is needed: the description (current or accepted) just says where it is.
  const NodeDescription used = LoadNodeDescription(env, cache_dir);
  absl::StatusOr<std::string> finished = EnforcerFor(used.settings, open).Finish(LeaseOwner(env.job_id));
  if (!finished.ok()) return {1, Joined(std::string(finished.status().message()), used.note)};
  return {0, Joined(used.note, *finished == "no power limit to restore" ? "" : *finished)};
}

}  // namespace rackwise::slurm
