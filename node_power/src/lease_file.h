// The state file of PowerLimitLeases: one line per leased GPU, "<gpu> <owner> <limit_mw> <previous_mw>",
// '#' comments. Written to a temporary file, fsync'ed and renamed over the old one (then the directory is
// fsync'ed), so that a crash leaves either the old or the new file, never a torn one. An exclusive flock on
// "<file>.lock" serialises read-modify-write cycles between processes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_power {

// Creates the directory of `path` with its missing parents and checks it (see MakeTrustedDirectory).
absl::Status MakeDirectoryOf(const std::string& path);
// False only when `path` certainly does not exist.
bool MayExist(const std::string& path);

// A missing file holds no leases. A malformed line is DataLoss naming the file and line.
absl::StatusOr<std::vector<PowerLimitLease>> ReadLeaseFile(const std::string& path);
absl::Status WriteLeaseFile(const std::string& path, const std::vector<PowerLimitLease>& leases);

// Holds an exclusive flock on "<path>.lock" while alive.
class LeaseFileLock {
 public:
  static absl::StatusOr<LeaseFileLock> Acquire(const std::string& path);
  LeaseFileLock(LeaseFileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  LeaseFileLock& operator=(LeaseFileLock&&) = delete;
  ~LeaseFileLock();

 private:
  explicit LeaseFileLock(int fd) : fd_(fd) {}
  int fd_;
};

// A state file's leases, read while holding its lock, which is released when this is destroyed.
struct LockedLeases {
  LeaseFileLock lock;
  std::vector<PowerLimitLease> leases;
};
absl::StatusOr<LockedLeases> LockAndReadLeaseFile(const std::string& path);

}  // namespace rackwise::node_power
