// SPDX-License-Identifier: GPL-2.0-or-later
// Which nodes a requeued job must not restart on yet, so that its job prolog (which sets its GPUs' power
// limits) really runs there.
//
// slurmd runs a job's prolog only the first time it sees the job id: it keeps the id in its credential cache
// until AuthInfo's cred_expire (default 120 s) after the job ended on that node. A job requeued and started
// again on the same node within that window gets no prolog, so no power limit. Slurm guards against this by
// delaying a requeued job's begin time by cred_expire + 1 s, but an administrator's
// `scontrol update jobid=N starttime=now` (or a release with a new start time) undoes that delay. The select
// plugin remembers where each job ended and when; until the window has passed those nodes are not offered to
// the same job. Slurm-free, so that it is unit-tested without slurmctld.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rackwise/topology.h"

namespace rackwise::slurm {

// Seconds after a job left a node before slurmd has forgotten it for sure: AuthInfo's cred_expire (Slurm's
// rule: missing or below 5 means the default, 120) plus the time slurmd may spend ending the job's steps before
// it starts counting (KillWait, at least 5 s) plus one second.
int64_t PrologSkipWindowSeconds(std::string_view authinfo, int64_t kill_wait_s);

class RecentDepartures {
 public:
  // Keeps at most `max_jobs` jobs; when full, the oldest departures are dropped first (a job the guard forgets
  // can only restart earlier than it should, which is what Slurm alone would allow).
  explicit RecentDepartures(size_t max_jobs = 200000) : max_jobs_(max_jobs) {}

  // Job `job_id` left `nodes` at `now_s` (seconds, any epoch). A later departure of the same job replaces it.
  void Left(uint32_t job_id, std::vector<NodeId> nodes, int64_t now_s);

  // The nodes `job_id` left less than `window_s` before `now_s`, and in `*wait_s` (if given) the seconds until
  // all of them may be used again; empty when none.
  std::vector<NodeId> Avoid(uint32_t job_id, int64_t now_s, int64_t window_s, int64_t* wait_s = nullptr) const;

  // Forgets departures older than `window_s` (called now and then; Avoid is right without it).
  void Prune(int64_t now_s, int64_t window_s);

  size_t size() const { return by_job_.size(); }

 private:
  struct Departure {
    std::vector<NodeId> nodes;
    int64_t left_at = 0;
  };
  void DropOldest();

  size_t max_jobs_;
  absl::flat_hash_map<uint32_t, Departure> by_job_;
};

}  // namespace rackwise::slurm
