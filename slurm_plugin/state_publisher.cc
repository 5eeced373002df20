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
    : path_(std::move(path)),
      interval_(interval),
      snapshot_(std::move(snapshot)),
      log_(std::move(log)),
      thread_([this] { Run(); }) {}

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
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    PublishOnce();
    lock.lock();
  }
}

void StatePublisher::PublishOnce() {
  std::optional<std::string> text;
  try {
    text = snapshot_();
  } catch (...) {  // a bad_alloc while copying the ledger: try again next round
    return;
  }
  if (!text || *text == written_) return;
  std::string error;
  if (WriteAtomically(*text, &error)) {
    written_ = *std::move(text);
    last_error_.clear();
  } else if (error != last_error_) {
    last_error_ = error;
    log_(error);
  }
}

// Write, fsync, rename: after a crash the file holds the old state or the new one, never a mix.
bool StatePublisher::WriteAtomically(const std::string& text, std::string* error) const {
  std::string tmp = path_ + ".tmp";
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
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    *error = path_ + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace rackwise::slurm
