// One scheduler's trace replay (a lane): its FIFO + EASY backfill queue (see rackwise/simulator.h) over the trace's
// jobs and the cluster's nodes, or over a subset of each, with its own ledger, stepped from outside. Simulate runs one
// that owns everything; SimulateSplit (rackwise/split_simulator.h) runs two over one event timeline and couples
// their ledgers through the caps (SetCaps). Internal to the simulator.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rackwise/fallback_order.h"
#include "rackwise/placer.h"
#include "rackwise/shadow_time.h"
#include "rackwise/simulator.h"
#include "rackwise/telemetry.h"
#include "simulator_meter.h"
#include "simulator_policies.h"

namespace rackwise::sim {

// Told of every allocation a lane starts and ends, with what its GPUs really draw (0: what the ledger charges), so
// that a whole-cluster ledger and meter can follow several lanes.
class LaneObserver {
 public:
  virtual ~LaneObserver() = default;
  // An error stops the replay (a lane placed what the whole cluster cannot hold: a bug).
  virtual absl::Status Started(const Allocation& allocation, Milliwatts measured_per_gpu) = 0;
  virtual void Finished(const Allocation& allocation, Milliwatts measured_per_gpu) = 0;
};

struct LaneSetup {
  std::optional<std::vector<int>> jobs;  // trace indices this lane queues; unset: every job
  std::vector<NodeId> foreign_nodes;     // nodes of another lane: down in this lane's ledger (still drawing idle)
  LaneObserver* observer = nullptr;
};

enum class Try { kStarted, kWaiting, kRejected };

struct JobState {
  double start = -1;
  double end = -1;
  int placement = -1;  // index into placements_
};

class Replay {
 public:
  Replay(const Topology& t, const std::vector<TraceJob>& jobs, const SimOptions& options, LaneSetup setup)
      : t_(t),
        jobs_(jobs),
        options_(options),
        ledger_(t),
        empty_(t),
        real_(t),
        meter_(ledger_, real_),
        policy_(sim::MakePolicy(options.policy, t, options)),
        state_(jobs.size()),
        head_since_(jobs.size(), -1),
        observer_(setup.observer),
        whole_cluster_(!setup.jobs && setup.foreign_nodes.empty()) {
    telemetry_.enabled = options.telemetry;
    telemetry_.reclaim_fraction = options.reclaim_fraction;
    for (NodeId n : setup.foreign_nodes) ledger_.SetNodeHealth(n, NodeHealth::kDown);
    free_gpus_ = 0;
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) free_gpus_ += ledger_.free_gpu_count(n);
    lane_gpus_ = whole_cluster_ ? t.total_gpus() : free_gpus_;
    for (const Rack& r : t.racks()) rack_cap_.push_back(r.cap);
    for (const PowerDomain& p : t.power_domains()) pd_cap_.push_back(p.cap);
    rack_ceiling_ = rack_cap_;
    pd_ceiling_ = pd_cap_;
    if (setup.jobs) {
      order_ = std::move(*setup.jobs);
    } else {
      order_.resize(jobs_.size());
      for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int>(i);
    }
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) { return jobs_[a].submit < jobs_[b].submit; });
  }

  absl::Status Run() {
    double now = order_.empty() ? 0 : jobs_[order_[0]].submit;
    while (!Done()) {
      const double next_time = NextEvent();
      if (next_time != std::numeric_limits<double>::infinity()) now = std::max(now, next_time);
      Advance(now);
      if (absl::Status s = Schedule(now); !s.ok()) return s;
    }
    EndReservation(now);
    return absl::OkStatus();
  }

  // The next event: a job ends, a job arrives, or a `preferred` job's wait for the fewest domains runs out.
  double NextEvent() const {
    double next_time = std::numeric_limits<double>::infinity();
    if (!running_.empty()) next_time = running_.begin()->first;
    if (next_ < order_.size()) next_time = std::min(next_time, jobs_[order_[next_]].submit);
    if (!wakeups_.empty() && !queue_.empty()) next_time = std::min(next_time, *wakeups_.begin());
    return next_time;
  }
  bool Done() const { return next_ == order_.size() && running_.empty() && queue_.empty(); }
  double OldestQueued() const {
    return queue_.empty() ? std::numeric_limits<double>::infinity() : jobs_[queue_.front()].submit;
  }

  void Advance(double now) {
    while (!wakeups_.empty() && *wakeups_.begin() <= now) wakeups_.erase(wakeups_.begin());
    meter_.Advance(now);
    bool released = false;
    while (!running_.empty() && running_.begin()->first <= now) {
      const int j = running_.begin()->second;
      running_.erase(running_.begin());
      Finish(j);
      released = true;
    }
    if (released) failed_shapes_.clear();
    while (next_ < order_.size() && jobs_[order_[next_]].submit <= now) queue_.push_back(order_[next_++]);
    if (next_ == order_.size() && !arrivals_done_) {
      arrivals_done_ = true;  // the last submit is now: what the GPUs did while work kept arriving
      busy_at_last_submit_ = meter_.busy_gpu_seconds();
      last_submit_ = meter_.now();
    }
    if (options_.telemetry && !queue_.empty()) Measure();
  }

  // Another lane's draw changed what this one may use. A shape that failed may fit under a raised cap.
  void SetCaps(const std::vector<Milliwatts>& rack, const std::vector<Milliwatts>& power_domain) {
    bool raised = false;
    for (RackId r = 0; r < static_cast<RackId>(rack.size()); ++r) {
      if (rack[r] == rack_cap_[r]) continue;
      raised |= rack[r] > rack_cap_[r];
      rack_cap_[r] = rack[r];
      ledger_.SetRackCap(r, rack[r]);
    }
    for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(power_domain.size()); ++p) {
      if (power_domain[p] == pd_cap_[p]) continue;
      raised |= power_domain[p] > pd_cap_[p];
      pd_cap_[p] = power_domain[p];
      ledger_.SetPowerDomainCap(p, power_domain[p]);
    }
    if (raised) failed_shapes_.clear();
  }
  void SetCeiling(const std::vector<Milliwatts>& rack, const std::vector<Milliwatts>& power_domain) {
    rack_ceiling_ = rack;
    pd_ceiling_ = power_domain;
  }

  const Ledger& ledger() const { return ledger_; }
  CommitMode commit_mode() const { return policy_->commit_mode(); }
  double busy_gpu_seconds() const { return meter_.busy_gpu_seconds(); }
  double busy_gpu_seconds_while_arriving() const { return busy_at_last_submit_; }
  void Close(double now) { EndReservation(now); }

  SimResult Result() const;

 private:
  using Shape = std::pair<uint64_t, int64_t>;
  // How long a job has waited, for `preferred` locality: since it reached the head of the queue (before that it
  // can only be backfilled, and a backfilled `preferred` job only takes its fewest domains). The policy's
  // preferred_wait_s, if set, bounds how long the head holds out for its fewest domains, protected by its
  // reservation. On an idle cluster there is nothing to wait for.
  double Waited(int j, double now) const {
    if (running_.empty()) return std::numeric_limits<double>::max();
    return head_since_[j] < 0 ? 0 : now - head_since_[j];
  }
  bool Preferred(int j) const {
    return jobs_[j].locality.value_or(t_.policy().default_locality) == Locality::kPreferred;
  }
  // Whether the core's rule may hold job j out for its fewest domains, so that an estimate is worth working out:
  // the head by PreferredHoldsOut, a job tried by backfill by BackfillHoldsOut; only under rackwise (a baseline
  // reads none of rackwise's locality knobs).
  bool WantsEstimate(int j, double now) const {
    return policy_->holds_out_for_fewest() && Preferred(j) && !running_.empty() &&
           PreferredWantsEstimate(t_.policy(), Locality::kPreferred, Waited(j, now));
  }
  bool MayHoldOut(int j, double now) const { return head_since_[j] >= 0 && WantsEstimate(j, now); }
  // Whether the head may start spread out: not while the core's rule holds it out for its fewest domains.
  bool Relaxed(int j, double now) {
    if (!MayHoldOut(j, now)) return true;
    // The trace has no time-limit column: the duration stands for the limit (a limit that is never exceeded).
    return !PreferredHoldsOut(t_.policy(), Waited(j, now), FewestIn(j, now), jobs_[j].duration);
  }
  // Whether backfill may only start job j in its fewest domains (the core's BackfillHoldsOut, as the policy asks it).
  bool BackfillHeld(int j, double now) {
    const sim::Pending pending = PendingOf(j, now);
    PlacementRequest r;
    r.locality = jobs_[j].locality;
    r.waited_seconds = pending.waited_s;
    r.fewest_domains_in_seconds = pending.fewest_in_s;
    r.time_limit_seconds = jobs_[j].duration;
    r.started_by_backfill = true;
    return BackfillHoldsOut(r, t_.policy());
  }
  sim::Pending PendingOf(int j, double now) {
    sim::Pending p{Waited(j, now), std::nullopt};
    if (WantsEstimate(j, now)) p.fewest_in_s = FewestIn(j, now);
    return p;
  }

  // When job j can expect its fewest domains, from the running jobs' expected ends (the trace has no time-limit
  // column, so the scheduler's estimate is the replayed end: a perfect limit). Worked out again whenever a job
  // started or ended since (as a scheduler re-evaluates each pass); jobs of one shape share the estimate.
  std::optional<double> FewestAt(int j, double now) {
    if (fewest_at_changes_ != changes_) {
      fewest_at_.clear();
      fewest_at_changes_ = changes_;
    }
    const TraceJob& job = jobs_[j];
    const auto key = std::make_tuple(job.gpus, job.gpus_per_node, WattsToMilliwatts(job.watts_per_gpu));
    if (auto it = fewest_at_.find(key); it != fewest_at_.end()) return it->second;
    std::optional<double> at;
    PlacementRequest r;
    r.id = job.id;
    r.gpus = job.gpus;
    r.gpus_per_node = job.gpus_per_node;
    r.watts_per_gpu = job.watts_per_gpu;
    const bool fenced = fenced_;
    Fence(false);
    const std::vector<std::optional<Milliwatts>> reading = SetReadingAside();
    const std::vector<ExpectedEnd> ends = Ends(now);
    absl::StatusOr<std::optional<double>> in = FewestDomainsIn(ledger_, r, ends, free_gpus_);
    if (in.ok() && *in) at = now + **in;
    PutReadingBack(reading);
    Fence(fenced);
    fewest_at_.emplace(key, at);
    return at;
  }
  // The ledger walks (the reservation's shadow time, FewestAt) count estimates: a reading is of now, and releasing
  // a job from the ledger cannot take its draw out of it. The reading (with what was placed since) is put back.
  std::vector<std::optional<Milliwatts>> SetReadingAside() {
    std::vector<std::optional<Milliwatts>> reading;
    if (!options_.telemetry) return reading;
    for (RackId rack = 0; rack < static_cast<RackId>(t_.racks().size()); ++rack)
      reading.push_back(ledger_.measured_rack_draw_now(rack));
    ledger_.ClearMeasuredDraw();
    return reading;
  }
  void PutReadingBack(const std::vector<std::optional<Milliwatts>>& reading) {
    if (options_.telemetry) ledger_.SetMeasuredDraw(reading, telemetry_.reclaim_fraction, /*count_recent=*/false);
  }
  std::optional<double> FewestIn(int j, double now) {
    const std::optional<double> at = FewestAt(j, now);
    if (!at) return std::nullopt;
    return std::max(0.0, *at - now);
  }
  std::vector<ExpectedEnd> Ends(double now) const {
    std::vector<ExpectedEnd> ends;
    ends.reserve(running_.size());
    for (const auto& [end, j] : running_) ends.push_back({absl::StrCat("j", j), end - now});
    return ends;
  }

  void MarkHead(int j, double now) {
    if (head_since_[j] >= 0) return;
    head_since_[j] = now;
    // The bound on the hold-out runs out with no other event: the head may then spread.
    const std::optional<double> bound = t_.policy().preferred_wait_seconds;
    if (bound && policy_->holds_out_for_fewest() && Preferred(j)) wakeups_.insert(now + *bound);
  }

  // Jobs of one shape fare alike within a pass; a `preferred` job past the policy's wait is another shape.
  Shape ShapeOf(int index, double now, bool backfill, bool fence) {
    const TraceJob& j = jobs_[index];
    uint64_t loc = j.locality ? static_cast<uint64_t>(*j.locality) + 1 : 0;
    if (Relaxed(index, now)) loc |= 8;
    if (fence) loc |= 16;
    if (backfill) loc |= BackfillHeld(index, now) ? 64 : 32;
    return {static_cast<uint64_t>(j.gpus) << 16 | static_cast<uint64_t>(j.gpus_per_node) << 8 | loc,
            WattsToMilliwatts(j.watts_per_gpu)};
  }

  // `fence`: keep the job off the head's reserved nodes.
  absl::StatusOr<Try> TryStart(int j, double now, bool backfill, bool fence) {
    const TraceJob& job = jobs_[j];
    const Shape shape = ShapeOf(j, now, backfill, fence);
    if (failed_shapes_.contains(shape)) return Try::kWaiting;
    const sim::Pending pending = PendingOf(j, now);  // before the fence: it may look at the unfenced ledger
    Fence(fence);
    ++attempts_;
    sim::Choice choice;
    switch (policy_->Choose(ledger_, job, pending, backfill, &choice)) {
      case sim::Outcome::kNever: ++rejected_; return Try::kRejected;
      case sim::Outcome::kWait: failed_shapes_.insert(shape); return Try::kWaiting;
      case sim::Outcome::kStart: break;
    }
    Fence(false);  // commit (and meter) against the real caps; the choice kept within the lowered ones
    Allocation a;
    a.id = absl::StrCat("j", j);  // trace ids may repeat across files; the index is unique
    a.nodes = std::move(choice.nodes);
    std::sort(a.nodes.begin(), a.nodes.end(), [](const NodeGpus& x, const NodeGpus& y) { return x.node < y.node; });
    a.per_gpu = choice.per_gpu;
    if (absl::Status s = ledger_.Commit(a, policy_->commit_mode()); !s.ok()) {
      return absl::InternalError(absl::StrCat("policy ", SimPolicyName(options_.policy),
                                              " chose GPUs the ledger refused for job ", job.id, ": ", s.message()));
    }
    real_.Add(ledger_, a, MeasuredPerGpu(j), +1);
    if (observer_ != nullptr) {
      if (absl::Status s = observer_->Started(a, MeasuredPerGpu(j)); !s.ok()) return s;
    }
    SimPlacement p;
    p.job = j;
    p.start = now;
    p.per_gpu = a.per_gpu;
    p.min_domains = FewestDomains(job);
    std::vector<DomainId> domains;
    int gpus = 0;
    for (const NodeGpus& ng : a.nodes) {
      domains.push_back(t_.nodes()[ng.node].domain);
      p.racks.push_back(t_.nodes()[ng.node].rack);
      gpus += GpuCount(ng.gpus);
      if (ng.gpus != a.nodes.front().gpus) p.rail_aligned = false;
    }
    if (gpus != job.gpus) {
      return absl::InternalError(absl::StrCat("policy ", SimPolicyName(options_.policy), " gave job ", job.id, " ",
                                              gpus, " GPUs instead of ", job.gpus));
    }
    std::sort(domains.begin(), domains.end());
    p.domains = static_cast<int>(std::unique(domains.begin(), domains.end()) - domains.begin());
    p.slowed = options_.spread_slowdown > 0 && p.domains > sim::MinDomains(t_, job.gpus, job.gpus_per_node);
    p.end = now + job.duration * (p.slowed ? 1 + options_.spread_slowdown : 1);
    std::sort(p.racks.begin(), p.racks.end());
    p.racks.erase(std::unique(p.racks.begin(), p.racks.end()), p.racks.end());
    p.nodes = std::move(a.nodes);
    if (fence) Spend(p);
    meter_.Changed(p.racks, gpus);
    free_gpus_ -= gpus;
    ++changes_;
    state_[j].start = p.start;
    state_[j].end = p.end;
    state_[j].placement = static_cast<int>(placements_.size());
    running_.insert({p.end, j});
    placements_.push_back(std::move(p));
    return Try::kStarted;
  }

  void Finish(int j) {
    const SimPlacement& p = placements_[state_[j].placement];
    real_.Add(ledger_, AllocationOf(j), MeasuredPerGpu(j), -1);
    if (observer_ != nullptr) observer_->Finished(AllocationOf(j), MeasuredPerGpu(j));
    ledger_.Release(absl::StrCat("j", j));
    meter_.Changed(p.racks, -jobs_[j].gpus);
    free_gpus_ += jobs_[j].gpus;
    ++changes_;
  }

 public:
  // One scheduling pass at `now`, after Advance(now): the head while it fits, then backfill.
  absl::Status Schedule(double now) {
    // FIFO: start the head while it fits. A head that cannot start on an otherwise idle cluster never will
    // (with another lane drawing power, only if it cannot start even under this lane's ceiling).
    while (!queue_.empty()) {
      MarkHead(queue_.front(), now);
      absl::StatusOr<Try> r = TryStart(queue_.front(), now, /*backfill=*/false, /*fence=*/false);
      if (!r.ok()) return r.status();
      if (*r == Try::kWaiting && running_.empty() && !FitsUnderCeiling(queue_.front(), now)) {
        ++rejected_;
        r = Try::kRejected;
      }
      if (*r == Try::kWaiting) break;
      if (queue_.front() == reservation_.job) EndReservation(now);
      queue_.pop_front();
    }
    if (queue_.empty() || !options_.backfill) return absl::OkStatus();
    // EASY with a topology-aware reservation (as Slurm's backfill does with node bitmaps): the head gets the
    // nodes it would be placed on at its shadow time; a later job may start now if it fits and either ends by
    // the shadow time or stays off those nodes (they are fenced, drained, while it is tried).
    const int head = queue_.front();
    if (reservation_.job != head || now >= reservation_.shadow || reservation_.relaxed != Relaxed(head, now)) {
      if (absl::Status s = Reserve(head, now); !s.ok()) return s;
    }
    int depth = 0;
    for (auto it = std::next(queue_.begin()); it != queue_.end() && depth < options_.backfill_depth;) {
      if (free_gpus_ == 0) break;
      ++depth;
      const TraceJob& job = jobs_[*it];
      if (job.gpus > free_gpus_) {
        ++it;
        continue;
      }
      absl::StatusOr<Try> r = TryStart(*it, now, /*backfill=*/true, now + LongestRun(job) > reservation_.shadow);
      if (!r.ok()) {
        Fence(false);
        return r.status();
      }
      if (*r == Try::kWaiting) {
        ++it;
        continue;
      }
      it = queue_.erase(it);
    }
    Fence(false);
    return absl::OkStatus();
  }

 private:
  // The fewest NVLink domains the cluster can give the job over every node type (Placer::FewestDomains: what
  // rackwise's `required` waits for), the same yardstick for every policy; by size alone if the caps as
  // described can never hold it (a power-blind policy may still have run it).
  int FewestDomains(const TraceJob& job) {
    const auto shape = std::make_tuple(job.gpus, job.gpus_per_node, WattsToMilliwatts(job.watts_per_gpu));
    auto [it, fresh] = fewest_.try_emplace(shape, 0);
    if (fresh) {
      PlacementRequest r;
      r.gpus = job.gpus;
      r.gpus_per_node = job.gpus_per_node;
      r.watts_per_gpu = job.watts_per_gpu;
      absl::StatusOr<Placer::Fewest> f = Placer::FewestDomains(empty_, r);
      it->second = f.ok() && f->domains > 0 ? f->domains : sim::MinDomains(t_, job.gpus, job.gpus_per_node);
    }
    return it->second;
  }

  Milliwatts MeasuredPerGpu(int j) const { return WattsToMilliwatts(jobs_[j].measured_watts_per_gpu); }

  // Telemetry: every node's real GPU watts, read as a face reads its node power query answer, become the
  // ledger's reading. Every allocation held is in it (count_recent false): in the replay a job's GPUs draw from
  // the moment it starts, so no reading predates a ramp-up.
  void Measure() {
    counted_.resize(t_.racks().size());
    for (RackId r = 0; r < static_cast<RackId>(counted_.size()); ++r) counted_[r] = ledger_.counted_rack_draw(r);
    ApplyMeasuredDraw(MeasureRacks(t_, telemetry_, real_.readings()), telemetry_, /*count_recent=*/false, &ledger_);
    // A shape that did not fit may fit now if the reading moved a counted draw (a power domain's is the sum of its
    // racks'); otherwise the shapes known to fail still do, exactly as without telemetry.
    for (RackId r = 0; r < static_cast<RackId>(counted_.size()); ++r) {
      if (counted_[r] == ledger_.counted_rack_draw(r)) continue;
      failed_shapes_.clear();
      return;
    }
  }

  // How long a job may run once started: its placement is not known before it is tried.
  double LongestRun(const TraceJob& job) const { return job.duration * (1 + options_.spread_slowdown); }

  Allocation AllocationOf(int j) const {
    const SimPlacement& p = placements_[state_[j].placement];
    Allocation a;
    a.id = absl::StrCat("j", j);  // trace ids may repeat across files; the index is unique
    a.nodes = p.nodes;
    a.per_gpu = p.per_gpu;
    return a;
  }

  // The head's reservation: release running jobs in end order (on the ledger itself, restored afterwards) until
  // the policy can place the head; that end is the shadow time and the chosen nodes are reserved. With no such
  // time (the head cannot run even on the emptied cluster) there is no reservation and backfill is unrestricted.
  absl::Status Reserve(int head, double now);  // simulator_reservation.cc

  // Whether a head that waits with nothing of this lane running could start if no other lane drew power. If not,
  // it never will. Only asked when another lane lowered the caps: otherwise the attempt just made answered it.
  bool FitsUnderCeiling(int j, double now) {
    if (!BelowCeiling()) return false;
    ApplyCaps(rack_ceiling_, pd_ceiling_);
    ++attempts_;
    sim::Choice choice;
    const bool fits =
        policy_->Choose(ledger_, jobs_[j], PendingOf(j, now), /*backfill=*/false, &choice) == sim::Outcome::kStart;
    ApplyCaps(rack_cap_, pd_cap_);
    return fits;
  }
  bool BelowCeiling() const { return rack_cap_ != rack_ceiling_ || pd_cap_ != pd_ceiling_; }
  // Sets the ledger's caps for a probe; the lane's own (rack_cap_, pd_cap_) are put back after it.
  void ApplyCaps(const std::vector<Milliwatts>& rack, const std::vector<Milliwatts>& power_domain) {
    for (RackId r = 0; r < static_cast<RackId>(rack.size()); ++r) ledger_.SetRackCap(r, rack[r]);
    for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(power_domain.size()); ++p)
      ledger_.SetPowerDomainCap(p, power_domain[p]);
  }

  // For a policy that keeps to the caps: the watts each rack and power domain the head will draw from can spare
  // for jobs that outlast the shadow time (its room then, less what the head adds). Ledger in the shadow state.
  void Budget(const sim::Choice& choice);
  static void AddNeed(std::vector<std::pair<int, Milliwatts>>* budgets, int id, Milliwatts need, Milliwatts room);
  // A job that outlasts the shadow time started: what it draws is no longer spare.
  void Spend(const SimPlacement& p);

  void EndReservation(double now) {
    if (reservation_.job >= 0 && options_.record_placements) {
      reservations_.push_back({reservation_.job, reservation_.made, now, reservation_.shadow, reservation_.nodes});
    }
    reservation_ = Reservation{};
  }

  // Drains (or restores) the reserved nodes, so that no policy places a job there, and lowers (or restores) the
  // caps of the racks and power domains the head draws from to what they can spare past the shadow time.
  void Fence(bool on);

  struct Reservation {
    int job = -1;
    double made = 0;
    double shadow = std::numeric_limits<double>::infinity();
    std::vector<NodeId> nodes;  // sorted
    bool relaxed = false;       // made when the head (if `preferred`) had waited out the policy's hold-out
    // Watts each rack / power domain the head draws from can spare for jobs that outlast the shadow time.
    std::vector<std::pair<int, Milliwatts>> racks, power_domains;
  };

  const Topology& t_;
  const std::vector<TraceJob>& jobs_;
  SimOptions options_;
  std::vector<int> order_;  // the lane's jobs by submit time (ties by position)
  size_t next_ = 0;         // into order_: the next to arrive
  Ledger ledger_;
  const Ledger empty_;           // the cluster as described, for the fewest domains a job could have
  TelemetrySettings telemetry_;  // enabled with SimOptions::telemetry; every reading is fresh
  absl::flat_hash_map<std::tuple<int, int, Milliwatts>, int> fewest_;  // job shape -> FewestDomains
  sim::RealDraw real_;               // what the GPUs really draw (the trace's measured watts)
  std::vector<Milliwatts> counted_;  // per rack: the counted draw before the reading Measure applies
  sim::Meter meter_;
  std::unique_ptr<sim::Policy> policy_;
  std::vector<JobState> state_;
  std::vector<double> head_since_;  // per job: when it first reached the head of the queue (-1: not yet)
  std::vector<SimPlacement> placements_;
  std::list<int> queue_;
  std::set<std::pair<double, int>> running_;
  absl::flat_hash_set<Shape> failed_shapes_;
  std::multiset<double> wakeups_;
  Reservation reservation_;
  // FewestAt's estimates by job shape (gpus, per node, watts), for changes_ == fewest_at_changes_.
  absl::flat_hash_map<std::tuple<int, int, Milliwatts>, std::optional<double>> fewest_at_;
  long long fewest_at_changes_ = -1;
  bool fenced_ = false;  // the reserved nodes are drained while a job that would outlast the shadow is tried
  std::vector<SimReservation> reservations_;  // when waiting `preferred` jobs may start spread out
  long long free_gpus_ = 0;
  long long changes_ = 0;  // jobs started or ended so far
  long long attempts_ = 0;
  bool arrivals_done_ = false;
  double busy_at_last_submit_ = 0;
  double last_submit_ = 0;
  int rejected_ = 0;
  LaneObserver* observer_ = nullptr;
  bool whole_cluster_ = true;  // every job and node: Simulate, not one lane of several
  long long lane_gpus_ = 0;    // GPUs on this lane's nodes
  // Caps this lane places under (the described ones unless another lane draws under them), and the caps it would
  // have alone; per rack and per power domain.
  std::vector<Milliwatts> rack_cap_, pd_cap_, rack_ceiling_, pd_ceiling_;
};

// InvalidArgument for what Simulate refuses (no GPUs, bad options, a malformed job); shared by the entry points.
absl::Status CheckReplayInputs(const Topology& topology, const std::vector<TraceJob>& jobs, const SimOptions& options);

// The mean and 95th percentile (nearest rank) of `values`; both 0 when it is empty.
void MeanAndP95(std::vector<double> values, double* mean, double* p95);

}  // namespace rackwise::sim
