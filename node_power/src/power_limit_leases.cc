// PowerLimitLeases: record, set, roll back and give back GPU power limits. See power_limit_leases.h.
#include "node_power/power_limit_leases.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lease_file.h"

namespace rackwise::node_power {
namespace {

constexpr size_t kMaxOwnerLength = 256;

std::string Watts(int64_t mw) { return mw % 1000 == 0 ? absl::StrCat(mw / 1000, " W") : absl::StrCat(mw, " mW"); }

const PowerLimitLease* Find(const std::vector<PowerLimitLease>& leases, int gpu) {
  for (const PowerLimitLease& lease : leases) {
    if (lease.gpu == gpu) return &lease;
  }
  return nullptr;
}

}  // namespace

PowerLimitLeases::PowerLimitLeases(GpuPowerControl* control, std::string state_file)
    : control_(control), state_file_(std::move(state_file)) {}

absl::Status PowerLimitLeases::CheckRequest(std::string_view owner_view, const std::vector<int>& gpus) {
  const std::string owner(owner_view);
  if (owner.empty() || owner.size() > kMaxOwnerLength ||
      std::any_of(owner.begin(), owner.end(), [](char c) { return !absl::ascii_isgraph(c); })) {
    return absl::InvalidArgumentError(
        absl::StrCat("power limit owner \"", owner, "\" must be 1 to ", kMaxOwnerLength, " printable characters"));
  }
  if (gpus.empty()) return absl::InvalidArgumentError(absl::StrCat(owner, ": no GPUs to limit"));
  if (std::set<int>(gpus.begin(), gpus.end()).size() != gpus.size()) {
    return absl::InvalidArgumentError(absl::StrCat(owner, ": GPU list repeats a GPU: ", absl::StrJoin(gpus, ",")));
  }
  absl::StatusOr<int> count = control_->DeviceCount();
  if (!count.ok()) return count.status();
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= *count) {
      return absl::InvalidArgumentError(
          absl::StrCat(owner, ": GPU ", gpu, " does not exist (this machine has ", *count, " GPUs)"));
    }
  }
  return absl::OkStatus();
}

absl::Status PowerLimitLeases::Acquire(std::string_view owner, const std::vector<int>& gpus, int64_t limit_mw) {
  if (absl::Status ok = CheckRequest(owner, gpus); !ok.ok()) return ok;
  if (absl::Status made = MakeDirectoryOf(state_file_); !made.ok()) return made;
  absl::StatusOr<LockedLeases> held = LockAndReadLeaseFile(state_file_);  // locked until returning
  if (!held.ok()) return held.status();

  // Check everything before changing anything.
  std::vector<PowerLimitLease> wanted;
  std::vector<GpuPowerLimits> before;
  for (int gpu : gpus) {
    const PowerLimitLease* lease = Find(held->leases, gpu);
    if (lease != nullptr && lease->owner != owner) {
      return absl::FailedPreconditionError(
          absl::StrCat("GPU ", gpu, " is already limited to ", Watts(lease->limit_mw), " for ", lease->owner));
    }
    absl::StatusOr<GpuPowerLimits> limits = control_->Limits(gpu);
    if (!limits.ok()) return limits.status();
    if (limit_mw < limits->min_mw || limit_mw > limits->max_mw) {
      return absl::OutOfRangeError(absl::StrCat("GPU ", gpu, ": ", Watts(limit_mw),
                                                " is outside the board's power limit range ", Watts(limits->min_mw),
                                                " to ", Watts(limits->max_mw)));
    }
    before.push_back(*limits);
    wanted.push_back(
        PowerLimitLease{gpu, std::string(owner), limit_mw, lease != nullptr ? lease->previous_mw : limits->current_mw});
  }

  // Record the previous limits before touching a GPU, so that a crash at any point leaves enough to restore.
  std::vector<PowerLimitLease> recorded;
  for (const PowerLimitLease& lease : held->leases) {
    if (Find(wanted, lease.gpu) == nullptr) recorded.push_back(lease);
  }
  recorded.insert(recorded.end(), wanted.begin(), wanted.end());
  if (absl::Status written = WriteLeaseFile(state_file_, recorded); !written.ok()) return written;

  std::vector<PowerLimitLease> kept = held->leases;
  absl::Status set = SetAll(wanted, before, kept);
  if (set.ok()) return set;
  // Rolled back: the file goes back to what it held, plus any GPU that could not be set back.
  if (absl::Status written = WriteLeaseFile(state_file_, kept); !written.ok()) {
    return absl::Status(set.code(), absl::StrCat(set.message(), "; and ", written.message()));
  }
  return set;
}

// Sets every lease's limit; on the first failure sets back the GPUs this call changed (to their limit before
// the call) and returns the failure. `kept` receives leases for GPUs that could not be set back, so that the
// state file still says what to restore.
absl::Status PowerLimitLeases::SetAll(const std::vector<PowerLimitLease>& leases,
                                      const std::vector<GpuPowerLimits>& before, std::vector<PowerLimitLease>& kept) {
  size_t failed = leases.size();
  absl::Status error;
  for (size_t i = 0; i < leases.size(); ++i) {
    if (before[i].current_mw == leases[i].limit_mw) continue;
    error = control_->SetLimit(leases[i].gpu, leases[i].limit_mw);
    if (!error.ok()) {
      failed = i;
      break;
    }
  }
  if (failed == leases.size()) return absl::OkStatus();
  std::string message(error.message());
  for (size_t i = 0; i <= failed; ++i) {
    if (before[i].current_mw == leases[i].limit_mw) continue;
    absl::Status undone = control_->SetLimit(leases[i].gpu, before[i].current_mw);
    if (!undone.ok() && i < failed) {
      absl::StrAppend(&message, "; could not set GPU ", leases[i].gpu, " back to ", Watts(before[i].current_mw), ": ",
                      undone.message());
      if (Find(kept, leases[i].gpu) == nullptr) kept.push_back(leases[i]);
    }
  }
  return absl::Status(error.code(), message);
}

absl::StatusOr<std::vector<ReleasedLease>> PowerLimitLeases::Release(std::string_view owner) {
  if (!MayExist(state_file_)) return std::vector<ReleasedLease>{};        // only Acquire creates it
  absl::StatusOr<LockedLeases> held = LockAndReadLeaseFile(state_file_);  // locked until returning
  if (!held.ok()) return held.status();

  std::vector<ReleasedLease> released;
  std::vector<PowerLimitLease> remaining;
  std::vector<std::string> failures;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (const PowerLimitLease& lease : held->leases) {
    if (lease.owner != owner) {
      remaining.push_back(lease);
      continue;
    }
    absl::StatusOr<GpuPowerLimits> limits = control_->Limits(lease.gpu);
    absl::Status restored = limits.status();
    if (limits.ok() && limits->current_mw == lease.limit_mw && lease.limit_mw != lease.previous_mw) {
      restored = control_->SetLimit(lease.gpu, lease.previous_mw);
    }
    if (!restored.ok()) {
      if (code == absl::StatusCode::kOk) code = restored.code();
      failures.push_back(
          absl::StrCat("GPU ", lease.gpu, " not restored to ", Watts(lease.previous_mw), ": ", restored.message()));
      remaining.push_back(lease);
      continue;
    }
    released.push_back(ReleasedLease{lease, limits->current_mw,
                                     limits->current_mw == lease.limit_mw && lease.limit_mw != lease.previous_mw});
  }
  if (remaining.size() != held->leases.size()) {
    if (absl::Status written = WriteLeaseFile(state_file_, remaining); !written.ok()) return written;
  }
  if (!failures.empty()) return absl::Status(code, absl::StrJoin(failures, "; "));
  return released;
}

absl::StatusOr<std::vector<PowerLimitLease>> PowerLimitLeases::List() const {
  if (!MayExist(state_file_)) return std::vector<PowerLimitLease>{};
  absl::StatusOr<LockedLeases> held = LockAndReadLeaseFile(state_file_);
  if (!held.ok()) return held.status();
  return std::move(held->leases);
}

}  // namespace rackwise::node_power
