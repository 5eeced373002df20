// SPDX-License-Identifier: GPL-2.0-or-later
// See state_publisher.h.
#include "state_publisher.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rackwise::slurm {

StatePublisher::StatePublisher(std::string path, std::chrono::milliseconds interval, Snapshot snapshot, Log log)
    : StatePublisher(
          std::vector<std::string>{std::move(path)}, interval,
          [snapshot = std::move(snapshot)] { return std::vector<std::optional<std::string>>{snapshot()}; },
          std::move(log)) {}

StatePublisher::StatePublisher(std::vector<std::string> paths, std::chrono::milliseconds interval, Snapshots snapshots,
                               Log log)
    : outputs_([&paths] {
        std::vector<Output> out;
        for (std::string& p : paths) out.push_back({std::move(p), "", ""});
        return out;
      }()),
      interval_(interval),
      snapshots_(std::move(snapshots)),
      log_(std::move(log)),
      thread_(
          [this] {
            PublishOnce();
            return interval_.load();
          },
          PeriodicThread::FirstBeat::kAfterWait, interval) {}

void StatePublisher::Wake() { thread_.Wake(); }

void StatePublisher::SetInterval(std::chrono::milliseconds interval) { interval_.store(interval); }

void StatePublisher::PublishOnce() {
  std::vector<std::optional<std::string>> texts;
  try {
    texts = snapshots_();
  } catch (...) {  // a bad_alloc while copying the ledger: try again next round
    return;
  }
  for (size_t i = 0; i < texts.size() && i < outputs_.size(); ++i) {
    Output& out = outputs_[i];
    if (!texts[i] || *texts[i] == out.written) continue;
    std::string error;
    if (WriteAtomically(out.path, *texts[i], &error)) {
      out.written = *std::move(texts[i]);
      out.last_error.clear();
    } else if (error != out.last_error) {
      out.last_error = error;
      log_(error);
    }
  }
}

// Write, fsync, rename: after a crash the file holds the old state or the new one, never a mix.
bool StatePublisher::WriteAtomically(const std::string& path, const std::string& text, std::string* error) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  bool ok = ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace rackwise::slurm
