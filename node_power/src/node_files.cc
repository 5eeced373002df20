// Directories and whole-file writes of the files a node keeps. See node_files.h.
#include "node_power/node_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace rackwise::node_power {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  const int error = errno;
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

absl::Status SyncDirectory(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open directory", dir);
  int rc = fsync(fd);
  close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("cannot fsync directory", dir);
}

// Creates one level. Another process may create it at the same moment: EEXIST is success.
absl::Status MakeOneLevel(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) == 0) {
    // The umask may have taken bits away; the documented mode is 0755 whatever it is.
    if (chmod(dir.c_str(), 0755) != 0) return Errno("cannot set mode 0755 on", dir);
    return absl::OkStatus();
  }
  if (errno == EEXIST) return absl::OkStatus();
  return Errno("cannot create directory", dir);
}

absl::Status CheckTrusted(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return Errno("cannot stat", dir);
  if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(absl::StrCat(dir, " exists and is not a directory"));
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is owned by uid ", st.st_uid, ", not root: chown root ", dir));
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is writable by every user (mode %04o): chmod o-w %s", dir, st.st_mode & 07777, dir));
  }
  return absl::OkStatus();
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  const std::string::size_type slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status MakeTrustedDirectory(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty directory path");
  // Each prefix ending before a '/', then the whole path: mkdir -p.
  for (std::string::size_type slash = dir.find('/', 1); slash != std::string::npos; slash = dir.find('/', slash + 1)) {
    if (absl::Status made = MakeOneLevel(dir.substr(0, slash)); !made.ok()) return made;
  }
  if (absl::Status made = MakeOneLevel(dir); !made.ok()) return made;
  return CheckTrusted(dir);
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode) {
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno("cannot create", temporary);
  absl::Status error;
  while (!text.empty() && error.ok()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = Errno("cannot write", temporary);
    if (n > 0) text.remove_prefix(static_cast<size_t>(n));
  }
  if (error.ok() && fsync(fd) != 0) error = Errno("cannot fsync", temporary);
  close(fd);
  if (error.ok() && rename(temporary.c_str(), path.c_str()) != 0) error = Errno("cannot rename over", path);
  if (!error.ok()) {
    unlink(temporary.c_str());
    return error;
  }
  return SyncDirectory(DirectoryOf(path));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("cannot read", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Errno("cannot read", path);
  return text.str();
}

}  // namespace rackwise::node_power
