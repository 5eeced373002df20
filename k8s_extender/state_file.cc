// See state_file.h.
#include "state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "extender_service.h"
#include "rackwise/cluster_description.h"
#include "rackwise/cluster_state.h"

namespace rackwise::k8s {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

absl::Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open directory", dir);
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok ? absl::OkStatus() : Errno("cannot fsync directory", dir);
}

}  // namespace

std::string DefaultStateFile(const std::string& description_path) {
  std::filesystem::path p(description_path);
  p.replace_extension(".state.yaml");
  return p.string();
}

absl::StatusOr<std::optional<v1::ClusterState>> LoadStateFile(const std::string& path,
                                                              const v1::ClusterDescription& description) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ec) return absl::UnavailableError(absl::StrCat("cannot check ", path, ": ", ec.message()));
    return std::optional<v1::ClusterState>();
  }
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterState> state = LoadClusterState(path, description, &diagnostics);
  if (!state.ok()) {
    std::string text;
    for (const Diagnostic& d : diagnostics) absl::StrAppend(&text, text.empty() ? "" : "; ", d.ToString());
    return absl::InvalidArgumentError(text.empty() ? std::string(state.status().message()) : text);
  }
  return std::optional<v1::ClusterState>(*std::move(state));
}

absl::Status SaveStateFile(const std::string& path, const v1::ClusterState& state) {
  const std::string text = absl::StrCat("# rackwise-extender operator state (caps, node health, allocations set over ",
                                        "gRPC); rewritten on every change\n", ClusterStateToYaml(state));
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", tmp);
  const bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    errno = saved_errno;
    return Errno("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status s = Errno("cannot rename over", path);
    ::unlink(tmp.c_str());
    return s;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? "." : dir);
}

absl::StatusOr<v1::ClusterState> AttachStateFile(const std::string& path, const v1::ClusterDescription& description,
                                                 ExtenderService* service) {
  absl::StatusOr<std::optional<v1::ClusterState>> saved = LoadStateFile(path, description);
  if (!saved.ok()) return saved.status();
  v1::ClusterState restored = saved->value_or(v1::ClusterState());
  if (absl::Status s = service->RestoreOperatorState(restored); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  service->SetStateSink([path](const v1::ClusterState& state) { return SaveStateFile(path, state); });
  return restored;
}

}  // namespace rackwise::k8s
