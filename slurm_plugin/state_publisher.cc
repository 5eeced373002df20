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
      thread_([this] { Run(); }) {}

void StatePublisher::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void StatePublisher::SetInterval(std::chrono::milliseconds interval) {
  {
    std::lock_guard lock(mu_);
    interval_ = interval;
  }
  wake_.notify_all();
}

StatePublisher::~StatePublisher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StatePublisher::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, interval_, [this] { return stop_ || woken_; });
    if (stop_) return;
    woken_ = false;
    lock.unlock();
    PublishOnce();
    lock.lock();
  }
}

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
