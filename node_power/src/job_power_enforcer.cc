// JobPowerEnforcer: which GPUs of a job need a limit, and applying or giving it back. See job_power_enforcer.h.
#include "node_power/job_power_enforcer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rackwise::node_power {
namespace {

std::string Watts(int64_t mw) {
  return mw % 1000 == 0 ? absl::StrCat(mw / 1000, " W") : absl::StrCat(static_cast<double>(mw) / 1000.0, " W");
}

}  // namespace

JobPowerEnforcer::JobPowerEnforcer(GpuPowerOpener open, std::string state_file)
    : open_(std::move(open)), state_file_(std::move(state_file)) {}

absl::StatusOr<std::string> JobPowerEnforcer::Start(const JobGpuPower& job) {
  if (job.gpus.empty()) return std::string("no GPUs on this node");
  const std::string what = absl::StrCat(Watts(job.counted_mw), " per GPU on GPUs ", absl::StrJoin(job.gpus, ","));
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> control = open_();
  if (!control.ok()) {
    if (!job.declared) {
      return absl::StrCat("no power limit set (", control.status().message(),
                          "); the job counts its node type's default watts");
    }
    return absl::Status(control.status().code(), absl::StrCat("cannot limit ", what, ": ", control.status().message()));
  }
  std::vector<int> limited;  // boards that could draw more than was counted
  for (int gpu : job.gpus) {
    absl::StatusOr<GpuPowerLimits> limits = (*control)->Limits(gpu);
    if (!limits.ok()) {
      return absl::Status(limits.status().code(), absl::StrCat("cannot limit ", what, ": ", limits.status().message()));
    }
    if (limits->max_mw > job.counted_mw) limited.push_back(gpu);
  }
  if (limited.empty()) {
    return absl::StrCat("no power limit needed for ", what, ": no board can draw more");
  }
  PowerLimitLeases leases(control->get(), state_file_);
  if (absl::Status held = leases.Acquire(job.owner, limited, job.counted_mw); !held.ok()) {
    return absl::Status(held.code(), absl::StrCat("cannot limit ", what, ": ", held.message()));
  }
  return absl::StrCat("power limit ", Watts(job.counted_mw), " set on GPUs ", absl::StrJoin(limited, ","));
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
  std::vector<std::string> done;
  for (const ReleasedLease& r : *released) {
    done.push_back(r.restored ? absl::StrCat("GPU ", r.lease.gpu, " back to ", Watts(r.lease.previous_mw))
                              : absl::StrCat("GPU ", r.lease.gpu, " left at ", Watts(r.found_mw),
                                             r.found_mw == r.lease.previous_mw ? "" : " (changed by someone else)"));
  }
  return absl::StrCat("power limits restored: ", absl::StrJoin(done, ", "));
}

}  // namespace rackwise::node_power
