// Reading, writing (write-then-rename) and locking the lease state file. See lease_file.h.
#include "lease_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "node_power/node_files.h"

namespace rackwise::node_power {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::StatusOr<PowerLimitLease> ParseLine(absl::string_view line, const std::string& path, int number) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  PowerLimitLease lease;
  if (fields.size() != 4 || !absl::SimpleAtoi(fields[0], &lease.gpu) || lease.gpu < 0 ||
      !absl::SimpleAtoi(fields[2], &lease.limit_mw) || lease.limit_mw < 0 ||
      !absl::SimpleAtoi(fields[3], &lease.previous_mw) || lease.previous_mw < 0) {
    return absl::DataLossError(
        absl::StrCat(path, ":", number, ": expected \"<gpu> <owner> <limit_mw> <previous_mw>\", got \"", line, "\""));
  }
  lease.owner = std::string(fields[1]);
  return lease;
}

}  // namespace

absl::Status MakeDirectoryOf(const std::string& path) { return MakeTrustedDirectory(DirectoryOf(path)); }

bool MayExist(const std::string& path) { return access(path.c_str(), F_OK) == 0 || errno != ENOENT; }

absl::StatusOr<std::vector<PowerLimitLease>> ReadLeaseFile(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::vector<PowerLimitLease>{};
  std::ifstream in(path);
  if (!in) return Errno("cannot read", path);
  std::vector<PowerLimitLease> leases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    absl::StatusOr<PowerLimitLease> lease = ParseLine(text, path, number);
    if (!lease.ok()) return lease.status();
    leases.push_back(*std::move(lease));
  }
  if (in.bad()) return Errno("cannot read", path);
  return leases;
}

absl::Status WriteLeaseFile(const std::string& path, const std::vector<PowerLimitLease>& leases) {
  std::string text = "# rackwise GPU power limit leases: <gpu> <owner> <limit_mw> <previous_mw>\n";
  for (const PowerLimitLease& lease : leases) {
    absl::StrAppend(&text, lease.gpu, " ", lease.owner, " ", lease.limit_mw, " ", lease.previous_mw, "\n");
  }
  return WriteFileAtomically(path, text, 0600);
}

absl::StatusOr<LeaseFileLock> LeaseFileLock::Acquire(const std::string& path) {
  const std::string lock_path = absl::StrCat(path, ".lock");
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot open", lock_path);
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    absl::Status error = Errno("cannot lock", lock_path);
    close(fd);
    return error;
  }
  return LeaseFileLock(fd);
}

absl::StatusOr<LockedLeases> LockAndReadLeaseFile(const std::string& path) {
  absl::StatusOr<LeaseFileLock> lock = LeaseFileLock::Acquire(path);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<PowerLimitLease>> leases = ReadLeaseFile(path);
  if (!leases.ok()) return leases.status();
  return LockedLeases{*std::move(lock), *std::move(leases)};
}

LeaseFileLock::~LeaseFileLock() {
  if (fd_ >= 0) close(fd_);  // closing releases the flock
}

}  // namespace rackwise::node_power
