// SPDX-License-Identifier: GPL-2.0-or-later
// Publishes the plugin's live ledger as a state file (the format of `rackwise validate --state`, read by
// `rackwise status`) every few seconds when it changed, and beside it any other file drawn from the same snapshot
// (the steered GPU limits, steered_limits.h). A thread of its own does the work, so slurmctld's
// threads never wait on the disk: the snapshot callback is expected to try-lock and give up when busy, and the
// file is written beside its final name and renamed over it, so a reader never sees half a file.
// Slurm-free, so it is unit-tested without a daemon.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "periodic_thread.h"

namespace rackwise::slurm {

class StatePublisher {
 public:
  // Returns the state text, or nullopt to skip this round (the ledger was busy or there is none yet).
  using Snapshot = std::function<std::optional<std::string>()>;
  // One text per path (nullopt: leave that file as it is this round); empty: skip the round.
  using Snapshots = std::function<std::vector<std::optional<std::string>>()>;
  using Log = std::function<void(const std::string&)>;

  // Starts the thread. `path` is the file to keep up to date; `log` reports write failures (once per change of
  // error per file, so a full disk does not flood the log).
  StatePublisher(std::string path, std::chrono::milliseconds interval, Snapshot snapshot, Log log);
  StatePublisher(std::vector<std::string> paths, std::chrono::milliseconds interval, Snapshots snapshots, Log log);
  // The destructor stops and joins the thread (its member, destroyed first).
  StatePublisher(const StatePublisher&) = delete;
  StatePublisher& operator=(const StatePublisher&) = delete;

  // One round now (the thread calls this every interval): snapshot, and write each file whose text changed.
  void PublishOnce();
  // A round as soon as the thread is free (new readings arrived), and the interval from now on. Thread-safe.
  void Wake();
  void SetInterval(std::chrono::milliseconds interval);

 private:
  struct Output {
    std::string path;
    std::string written;  // the text the file holds now (only the publishing thread touches it)
    std::string last_error;
  };
  static bool WriteAtomically(const std::string& path, const std::string& text, std::string* error);

  std::vector<Output> outputs_;
  std::atomic<std::chrono::milliseconds> interval_;
  const Snapshots snapshots_;
  const Log log_;
  PeriodicThread thread_;  // last: started once everything above is initialised
};

}  // namespace rackwise::slurm
