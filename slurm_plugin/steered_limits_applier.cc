// SPDX-License-Identifier: GPL-2.0-or-later
// See steered_limits_applier.h.
#include "steered_limits_applier.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "job_power.h"
#include "node_power/power_limit_leases.h"
#include "prometheus_text.h"

namespace rackwise::slurm {
namespace {

std::string Watts(Milliwatts mw) { return absl::StrFormat("%.3f W", static_cast<double>(mw) / 1000.0); }

std::string JobName(uint32_t job) { return absl::StrCat("job ", job); }

}  // namespace

bool SteeredLimitsApplier::Hold(uint32_t job, Held& held, node_power::GpuPowerControl& control,
                                const std::string& lease_file, Round* round) {
  node_power::PowerLimitLeases leases(&control, lease_file);
  const std::string owner = LeaseOwner(absl::StrCat(job));
  std::vector<std::string> done;
  for (int gpu : held.gpus) {
    absl::StatusOr<node_power::GpuPowerLimits> limits = control.Limits(gpu);
    absl::Status status = limits.status();
    Milliwatts target = held.target_mw;
    if (limits.ok()) {
      target = std::min(held.target_mw, limits->max_mw);
      if (limits->current_mw == target) {
        held.in_force[gpu] = target;
        continue;
      }
      status = leases.Acquire(owner, {gpu}, target);
    }
    if (!status.ok()) {
      ++failures_;
      const std::string cause = absl::StrCat(JobName(job), ": cannot apply the steered limit ", Watts(target),
                                             " per GPU on GPU ", gpu, ": ", status.message());
      if (reported_.insert(absl::StrCat(job, " ", target)).second) {
        round->log.push_back(cause);
        round->drains.push_back(cause);
      }
      return false;
    }
    ++changes_;
    held.in_force[gpu] = target;
    done.push_back(absl::StrCat(gpu));
  }
  if (!done.empty())
    round->log.push_back(absl::StrCat(JobName(job), " (generation ", held.generation, "): GPUs ",
                                      absl::StrJoin(done, ","), " to ", Watts(held.target_mw), " per GPU (declared ",
                                      Watts(held.declared_mw), ")"));
  return true;
}

SteeredLimitsApplier::Round SteeredLimitsApplier::Apply(const std::vector<SteeredLimit>& limits,
                                                        node_power::GpuPowerControl& control,
                                                        const std::string& lease_file) {
  Round round;
  absl::StatusOr<std::vector<node_power::PowerLimitLease>> leases =
      node_power::PowerLimitLeases(nullptr, lease_file).List();
  if (!leases.ok()) {
    const std::string cause = absl::StrCat("cannot read the GPU leases: ", leases.status().message());
    if (reported_.insert(cause).second) round.log.push_back(cause);
    return round;
  }
  absl::flat_hash_set<std::string> leased;  // owners with a lease here: their job runs on this node
  for (const node_power::PowerLimitLease& l : *leases) leased.insert(l.owner);
  absl::flat_hash_set<uint32_t> listed;
  for (const SteeredLimit& line : limits) {
    auto here = std::find_if(line.gpus.begin(), line.gpus.end(), [&](const auto& g) { return g.first == node_; });
    if (here == line.gpus.end()) continue;
    listed.insert(line.job_id);
    if (!leased.contains(LeaseOwner(absl::StrCat(line.job_id)))) {
      // Before its prolog, after its epilog, or a prolog that needed no limit: nothing here to steer safely.
      if (reported_.insert(absl::StrCat(line.job_id, " unleased")).second)
        round.log.push_back(absl::StrCat(
            JobName(line.job_id), ": listed, but no GPU of it holds a rackwise limit on this node; not steered"));
      held_.erase(line.job_id);
      continue;
    }
    Held& held = held_[line.job_id];
    held.target_mw = line.limit_mw;
    held.declared_mw = line.declared_mw;
    held.generation = line.generation;
    held.gpus = here->second;
    Hold(line.job_id, held, control, lease_file, &round);
  }
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    Held& held = it->second;
    if (!listed.contains(it->first)) {
      if (!leased.contains(LeaseOwner(absl::StrCat(it->first)))) {
        held_.erase(it);  // the job ended here: its epilog gave its limits back
      } else if (held.target_mw != held.declared_mw) {
        held.target_mw = held.declared_mw;  // its line disappeared: back to what it declared
        Hold(it->first, held, control, lease_file, &round);
      }
    }
    it = next;
  }
  return round;
}

std::string SteeredLimitsApplier::Metrics() const {
  std::string out;
  daemon::Gauge(&out, "rackwise_slurm_gpu_steered_limit_watts",
                "The power limit steering holds a job's GPU at on this node (watts).");
  for (const auto& [job, held] : held_) {
    for (const auto& [gpu, mw] : held.in_force)
      absl::StrAppendFormat(&out, "rackwise_slurm_gpu_steered_limit_watts{node=\"%s\",job=\"%d\",gpu=\"%d\"} %.3f\n",
                            daemon::Label(node_), job, gpu, static_cast<double>(mw) / 1000.0);
  }
  daemon::Counter(&out, "rackwise_slurm_gpu_steered_limit_changes_total", "GPU limits steering changed here.");
  absl::StrAppend(&out, "rackwise_slurm_gpu_steered_limit_changes_total ", changes_, "\n");
  daemon::Counter(&out, "rackwise_slurm_gpu_steered_limit_failures_total",
                  "GPU limits steering could not apply here (each drains the node once).");
  absl::StrAppend(&out, "rackwise_slurm_gpu_steered_limit_failures_total ", failures_, "\n");
  return out;
}

}  // namespace rackwise::slurm
