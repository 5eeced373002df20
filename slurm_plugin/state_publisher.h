// SPDX-License-Identifier: GPL-2.0-or-later
// Publishes the plugin's live ledger as a state file (the format of `rackwise validate --state`, read by
// `rackwise status`) every few seconds when it changed. A thread of its own does the work, so slurmctld's
// threads never wait on the disk: the snapshot callback is expected to try-lock and give up when busy, and the
// file is written beside its final name and renamed over it, so a reader never sees half a file.
// Slurm-free, so it is unit-tested without a daemon.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rackwise::slurm {

class StatePublisher {
 public:
  // Returns the state text, or nullopt to skip this round (the ledger was busy or there is none yet).
  using Snapshot = std::function<std::optional<std::string>()>;
  using Log = std::function<void(const std::string&)>;

  // Starts the thread. `path` is the file to keep up to date; `log` reports write failures (once per change of
  // error, so a full disk does not flood the log).
  StatePublisher(std::string path, std::chrono::milliseconds interval, Snapshot snapshot, Log log);
  ~StatePublisher();  // stops and joins the thread
  StatePublisher(const StatePublisher&) = delete;
  StatePublisher& operator=(const StatePublisher&) = delete;

  // One round now (the thread calls this every interval): snapshot, and write when the text changed.
  void PublishOnce();

 private:
  void Run();
  bool WriteAtomically(const std::string& text, std::string* error) const;

  const std::string path_;
  const std::chrono::milliseconds interval_;
  const Snapshot snapshot_;
  const Log log_;
  std::string written_;  // the text the file holds now (only the publishing thread touches it)
  std::string last_error_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above is initialised
};

}  // namespace rackwise::slurm
