// JobPowerEnforcer: which GPUs of a job need a limit, and applying or giving it back. See job_power_enforcer.h.
#include "node_power/job_power_enforcer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rackwise::node_power {
namespace {

std::string Watts(int64_t mw) {
  return mw % 1000 == 0 ? absl::StrCat(mw / 1000, " W") : absl::StrCat(static_cast<double>(mw) / 1000.0, " W");
}

// "450 W per GPU on GPUs 1,2", for messages about limiting a job.
std::string What(const JobGpuPower& job) {
  return absl::StrCat(Watts(*job.counted_mw), " per GPU on GPUs ", absl::StrJoin(job.gpus, ","));
}

// "GPU 1 back to 700 W, GPU 2 left at 650 W (changed by someone else)".
std::string Describe(const std::vector<ReleasedLease>& released) {
  std::vector<std::string> done;
  for (const ReleasedLease& r : released) {
    done.push_back(r.restored ? absl::StrCat("GPU ", r.lease.gpu, " back to ", Watts(r.lease.previous_mw))
                              : absl::StrCat("GPU ", r.lease.gpu, " left at ", Watts(r.found_mw),
                                             r.found_mw == r.lease.previous_mw ? "" : " (changed by someone else)"));
  }
  return absl::StrJoin(done, ", ");
}

}  // namespace

JobPowerEnforcer::JobPowerEnforcer(GpuPowerOpener open, std::string state_file)
    : open_(std::move(open)), state_file_(std::move(state_file)) {}

absl::StatusOr<std::string> JobPowerEnforcer::Start(const JobGpuPower& job) {
  if (job.gpus.empty()) return std::string("no GPUs on this node");
  std::unique_ptr<GpuPowerControl> control;  // opened once, by whichever step needs it first
  absl::StatusOr<std::string> given_back = GiveBackStale(job, &control);
  if (!given_back.ok()) return given_back.status();
  const std::string before = given_back->empty() ? "" : *given_back + "; ";
  if (!job.counted_mw) return before + kNoLimitSet;
  if (control == nullptr) {
    absl::StatusOr<std::unique_ptr<GpuPowerControl>> opened = open_();
    if (!opened.ok()) {
      if (!job.declared) {
        return absl::StrCat(before, "no power limit set (", opened.status().message(),
                            "); the job counts its node type's default watts");
      }
      return absl::Status(opened.status().code(),
                          absl::StrCat("cannot limit ", What(job), ": ", opened.status().message()));
    }
    control = *std::move(opened);
  }
  absl::StatusOr<std::string> limited = Limit(job, *control);
  if (!limited.ok()) return limited.status();
  return before + *limited;
}

// The owners other than the job's that still hold leases on its GPUs finished on this machine (the scheduler
// hands a GPU on only after its previous job's end here), so their limits are stale: given back now, or the
// job is refused. Returns what was given back, empty when nothing was.
absl::StatusOr<std::string> JobPowerEnforcer::GiveBackStale(const JobGpuPower& job,
                                                            std::unique_ptr<GpuPowerControl>* control) {
  absl::StatusOr<std::vector<PowerLimitLease>> held = PowerLimitLeases(nullptr, state_file_).List();
  if (!held.ok()) {
    return absl::Status(held.status().code(),
                        absl::StrCat("cannot check which GPUs are still limited: ", held.status().message()));
  }
  std::vector<std::string> owners;
  std::vector<int> gpus;
  for (const PowerLimitLease& lease : *held) {
    if (lease.owner == job.owner || std::find(job.gpus.begin(), job.gpus.end(), lease.gpu) == job.gpus.end()) continue;
    gpus.push_back(lease.gpu);
    if (std::find(owners.begin(), owners.end(), lease.owner) == owners.end()) owners.push_back(lease.owner);
  }
  if (owners.empty()) return std::string();
  const std::string stale = absl::StrCat("GPUs ", absl::StrJoin(gpus, ","), " still limited for finished ",
                                         absl::StrJoin(owners, ", "), " cannot be restored: ");
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> opened = open_();
  if (!opened.ok()) return absl::Status(opened.status().code(), stale + std::string(opened.status().message()));
  *control = *std::move(opened);
  PowerLimitLeases leases(control->get(), state_file_);
  std::vector<std::string> done;
  for (const std::string& owner : owners) {
    absl::StatusOr<std::vector<ReleasedLease>> released = leases.Release(owner);
    if (!released.ok()) return absl::Status(released.status().code(), stale + std::string(released.status().message()));
    done.push_back(absl::StrCat(owner, "'s ", Describe(*released)));
  }
  return absl::StrCat("limits of finished jobs given back: ", absl::StrJoin(done, "; "));
}

// The rule of the header: a limit on the boards that could draw more than was counted.
absl::StatusOr<std::string> JobPowerEnforcer::Limit(const JobGpuPower& job, GpuPowerControl& control) {
  const int64_t counted_mw = *job.counted_mw;
  std::vector<int> limited;  // boards that could draw more than was counted
  for (int gpu : job.gpus) {
    absl::StatusOr<GpuPowerLimits> limits = control.Limits(gpu);
    if (!limits.ok()) {
      return absl::Status(limits.status().code(),
                          absl::StrCat("cannot limit ", What(job), ": ", limits.status().message()));
    }
    if (limits->max_mw > counted_mw) limited.push_back(gpu);
  }
  if (limited.empty()) return absl::StrCat("no power limit needed for ", What(job), ": no board can draw more");
  PowerLimitLeases leases(&control, state_file_);
  if (absl::Status held = leases.Acquire(job.owner, limited, counted_mw); !held.ok()) {
    return absl::Status(held.code(), absl::StrCat("cannot limit ", What(job), ": ", held.message()));
  }
  return absl::StrCat("power limit ", Watts(counted_mw), " set on GPUs ", absl::StrJoin(limited, ","));
}

absl::StatusOr<std::string> JobPowerEnforcer::Finish(std::string_view owner) {
  PowerLimitLeases listing(nullptr, state_file_);  // List() reads the file only
  absl::StatusOr<std::vector<PowerLimitLease>> held = listing.List();
  if (!held.ok()) return held.status();
  bool any = false;
  for (const PowerLimitLease& lease : *held) any |= lease.owner == owner;
  if (!any) return std::string("no power limit to restore");
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> control = open_();
  if (!control.ok()) {
    return absl::Status(control.status().code(),
                        absl::StrCat("cannot restore GPU power limits: ", control.status().message()));
  }
  absl::StatusOr<std::vector<ReleasedLease>> released = PowerLimitLeases(control->get(), state_file_).Release(owner);
  if (!released.ok()) return released.status();
  return absl::StrCat("power limits restored: ", Describe(*released));
}

}  // namespace rackwise::node_power
