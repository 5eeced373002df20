// The preemption replay (see rackwise/preemption_replay.h): a priority queue over the trace, the simulator's
// placement policies for jobs that fit, and each policy's victim choice for jobs that do not.
#include "rackwise/preemption_replay.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "rackwise/placer.h"
#include "simulator_draw.h"
#include "simulator_meter.h"
#include "simulator_policies.h"
#include "simulator_replay.h"

namespace rackwise {
namespace {

std::string IdOf(int j) { return absl::StrCat("j", j); }  // trace ids may repeat across files; the index is unique

// What a policy starts a job with: the GPUs and, when it preempts, the victims.
struct Start {
  sim::Choice choice;
  std::vector<int> victims;  // sorted
};

class PreemptionReplay {
 public:
  PreemptionReplay(const Topology& t, const std::vector<TraceJob>& jobs, const PreemptionReplayOptions& options)
      : t_(t),
        jobs_(jobs),
        options_(options),
        ledger_(t),
        draw_(t),
        meter_(ledger_, draw_),
        policy_(sim::MakePolicy(
            options.policy == PreemptionPolicy::kRackwise ? SimPolicy::kRackwise : SimPolicy::kTreeBestFit, t, {})),
        state_(jobs.size()) {}

  absl::Status Run() {
    std::vector<int> arrivals(jobs_.size());
    for (size_t j = 0; j < jobs_.size(); ++j) arrivals[j] = static_cast<int>(j);
    std::stable_sort(arrivals.begin(), arrivals.end(), [&](int a, int b) { return jobs_[a].submit < jobs_[b].submit; });
    size_t next = 0;
    for (;;) {
      double now = kNever;
      if (next < arrivals.size()) now = jobs_[arrivals[next]].submit;
      if (!running_.empty()) now = std::min(now, running_.begin()->first);
      if (now == kNever) break;
      meter_.Advance(now);
      while (!running_.empty() && running_.begin()->first <= now) {
        const int j = running_.begin()->second;
        Stop(j);
        state_[j].done = true;
        last_end_ = std::max(last_end_, now);
      }
      for (; next < arrivals.size() && jobs_[arrivals[next]].submit <= now; ++next) Enqueue(arrivals[next]);
      if (absl::Status s = Schedule(now); !s.ok()) return s;
    }
    rejected_ += static_cast<int>(queue_.size());  // nothing runs and nothing arrives: they never will
    return absl::OkStatus();
  }

  PreemptionReplayResult Result() const;

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  using QueueKey = std::tuple<int64_t, double, int>;  // -priority, submit, index: the queue's order

  struct JobState {
    double start = 0;
    double first_start = -1;
    double end = 0;
    bool done = false;
    long long tried_at = -1;  // changes_ when it last failed to preempt (it is not asked again until it changes)
  };

  QueueKey KeyOf(int j) const { return {-jobs_[j].priority, jobs_[j].submit, j}; }
  void Enqueue(int j) { queue_.insert(KeyOf(j)); }
  Milliwatts MeasuredPerGpu(int j) const {
    return jobs_[j].measured_watts_per_gpu > 0 ? WattsToMilliwatts(jobs_[j].measured_watts_per_gpu) : 0;
  }
  std::vector<RackId> RacksOf(const std::vector<NodeGpus>& nodes) const {
    std::vector<RackId> racks;
    for (const NodeGpus& ng : nodes) racks.push_back(t_.nodes()[ng.node].rack);
    std::sort(racks.begin(), racks.end());
    racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
    return racks;
  }
  double LostGpuHours(int j, double now) const { return jobs_[j].gpus * (now - state_[j].start) / 3600.0; }

  // Every job in the queue that fits starts, in priority order; one that does not may preempt. After a
  // preemption the pass runs again: the victims are queued, and what they freed beyond the need may fit others.
  absl::Status Schedule(double now) {
    for (bool again = true; again;) {
      again = false;
      const std::vector<QueueKey> pass(queue_.begin(), queue_.end());
      for (const QueueKey& key : pass) {
        if (!queue_.contains(key)) continue;
        const int j = std::get<2>(key);
        const TraceJob& job = jobs_[j];
        Start start;
        const sim::Outcome outcome =
            policy_->Choose(ledger_, job, sim::Pending{now - job.submit, std::nullopt}, false, &start.choice);
        if (outcome == sim::Outcome::kNever) {
          queue_.erase(key);
          ++rejected_;
          continue;
        }
        if (outcome == sim::Outcome::kWait) {
          if (state_[j].tried_at == changes_) continue;
          state_[j].tried_at = changes_;
          absl::StatusOr<std::optional<Start>> preempting = Victims(j, now);
          if (!preempting.ok()) return preempting.status();
          if (!*preempting) continue;
          start = std::move(**preempting);
          Record(j, now, start);
          for (int v : start.victims) Requeue(v, now);
          again = true;
        }
        queue_.erase(key);
        if (absl::Status s = Begin(j, now, std::move(start.choice)); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // The running jobs of lower priority than `j`.
  std::vector<int> Preemptable(int j) const {
    std::vector<int> out;
    for (const auto& [end, r] : running_) {
      if (jobs_[r].priority < jobs_[j].priority) out.push_back(r);
    }
    return out;
  }

  absl::StatusOr<std::optional<Start>> Victims(int j, double now) {
    const std::vector<int> preemptable = Preemptable(j);
    if (preemptable.empty()) return std::nullopt;
    return options_.policy == PreemptionPolicy::kRackwise ? CoreVictims(j, now, preemptable)
                                                          : PriorityOrderVictims(j, now, preemptable);
  }

  // rackwise: the core's cheapest set among every preemptable job.
  absl::StatusOr<std::optional<Start>> CoreVictims(int j, double now, const std::vector<int>& preemptable) {
    const TraceJob& job = jobs_[j];
    std::vector<PreemptionCandidate> candidates;
    for (int r : preemptable) candidates.push_back({IdOf(r), jobs_[r].priority, LostGpuHours(r, now)});
    PlacementRequest request;
    request.id = IdOf(j);
    request.gpus = job.gpus;
    request.gpus_per_node = job.gpus_per_node;
    request.locality = job.locality;
    request.watts_per_gpu = job.watts_per_gpu;
    request.time_limit_seconds = job.duration;
    absl::StatusOr<std::optional<PreemptionPlan>> plan = PlanPreemption(ledger_, request, candidates, options_.limits);
    // Malformed for this cluster: the placement policy says kNever for the same request; nothing to preempt for.
    if (!plan.ok() || !*plan || (*plan)->victims.empty()) return std::nullopt;
    Start start;
    start.choice.nodes = (*plan)->decision.nodes;
    start.choice.per_gpu = (*plan)->decision.per_gpu;
    for (const std::string& id : (*plan)->victims) start.victims.push_back(std::stoi(id.substr(1)));
    std::sort(start.victims.begin(), start.victims.end());
    return start;
  }

  // cons_tres: remove preemptable jobs, lowest priority first (then the most recently started), until the job
  // fits; the victims are the removed jobs holding GPUs on the nodes it gets.
  absl::StatusOr<std::optional<Start>> PriorityOrderVictims(int j, double now, std::vector<int> preemptable) {
    std::sort(preemptable.begin(), preemptable.end(), [&](int a, int b) {
      return std::make_tuple(jobs_[a].priority, -state_[a].start, -a) <
             std::make_tuple(jobs_[b].priority, -state_[b].start, -b);
    });
    Ledger without = ledger_;
    for (size_t k = 0; k < preemptable.size(); ++k) {
      without.Release(IdOf(preemptable[k]));
      Start start;
      const sim::Outcome outcome =
          policy_->Choose(without, jobs_[j], sim::Pending{now - jobs_[j].submit, std::nullopt}, false, &start.choice);
      if (outcome != sim::Outcome::kStart) continue;
      for (size_t v = 0; v <= k; ++v) {
        const Allocation* held = ledger_.Find(IdOf(preemptable[v]));
        const bool overlaps = std::any_of(held->nodes.begin(), held->nodes.end(), [&](const NodeGpus& h) {
          return std::any_of(start.choice.nodes.begin(), start.choice.nodes.end(),
                             [&](const NodeGpus& c) { return c.node == h.node && (c.gpus & h.gpus); });
        });
        if (overlaps) start.victims.push_back(preemptable[v]);
      }
      std::sort(start.victims.begin(), start.victims.end());
      return start;
    }
    return std::nullopt;
  }

  void Record(int j, double now, const Start& start) {
    PreemptionEvent e;
    e.job = j;
    e.at = now;
    e.victims = start.victims;
    for (int v : start.victims) e.lost_gpu_hours += LostGpuHours(v, now);
    std::vector<DomainId> domains;
    for (const NodeGpus& ng : start.choice.nodes) domains.push_back(t_.nodes()[ng.node].domain);
    std::sort(domains.begin(), domains.end());
    e.domains = static_cast<int>(std::unique(domains.begin(), domains.end()) - domains.begin());
    e.min_domains = sim::MinDomains(t_, jobs_[j].gpus, jobs_[j].gpus_per_node);
    e.racks = static_cast<int>(RacksOf(start.choice.nodes).size());
    events_.push_back(std::move(e));
  }

  absl::Status Begin(int j, double now, sim::Choice choice) {
    Allocation a;
    a.id = IdOf(j);
    a.nodes = std::move(choice.nodes);
    std::sort(a.nodes.begin(), a.nodes.end(), [](const NodeGpus& x, const NodeGpus& y) { return x.node < y.node; });
    a.per_gpu = choice.per_gpu;
    if (absl::Status s = ledger_.Commit(a, policy_->commit_mode()); !s.ok()) {
      return absl::InternalError(absl::StrCat("policy ", PreemptionPolicyName(options_.policy),
                                              " chose GPUs the ledger refused for job ", jobs_[j].id, ": ",
                                              s.message()));
    }
    draw_.Add(ledger_, a, MeasuredPerGpu(j), +1);
    meter_.Changed(RacksOf(a.nodes), jobs_[j].gpus);
    JobState& s = state_[j];
    s.start = now;
    if (s.first_start < 0) s.first_start = now;
    s.end = now + jobs_[j].duration;
    running_.insert({s.end, j});
    ++changes_;
    return absl::OkStatus();
  }

  // The job leaves the ledger (it ended, or it is requeued).
  void Stop(int j) {
    const Allocation held = *ledger_.Find(IdOf(j));
    draw_.Add(ledger_, held, MeasuredPerGpu(j), -1);
    ledger_.Release(held.id);
    meter_.Changed(RacksOf(held.nodes), -jobs_[j].gpus);
    running_.erase({state_[j].end, j});
    ++changes_;
  }

  // Requeued: the work since it started is lost; it runs again from scratch.
  void Requeue(int j, double now) {
    Stop(j);
    state_[j].tried_at = -1;
    Enqueue(j);
  }

  const Topology& t_;
  const std::vector<TraceJob>& jobs_;
  PreemptionReplayOptions options_;
  Ledger ledger_;
  sim::RealDraw draw_;
  sim::Meter meter_;
  std::unique_ptr<sim::Policy> policy_;
  std::vector<JobState> state_;
  std::set<QueueKey> queue_;
  std::set<std::pair<double, int>> running_;  // (end, job)
  std::vector<PreemptionEvent> events_;
  long long changes_ = 0;  // jobs started or stopped so far
  int rejected_ = 0;
  double last_end_ = 0;
};

PreemptionReplayResult PreemptionReplay::Result() const {
  PreemptionReplayResult out;
  PreemptionReplayMetrics& m = out.metrics;
  m.jobs = static_cast<int>(jobs_.size());
  m.rejected = rejected_;
  int64_t lowest = std::numeric_limits<int64_t>::max();
  double first_submit = kNever;
  for (const TraceJob& j : jobs_) {
    lowest = std::min(lowest, j.priority);
    first_submit = std::min(first_submit, j.submit);
  }
  std::vector<double> high_waits, low_waits;
  for (size_t j = 0; j < jobs_.size(); ++j) {
    if (jobs_[j].priority > lowest) ++m.high_priority_jobs;
    if (!state_[j].done) continue;
    ++m.completed;
    if (jobs_[j].priority > lowest) {
      high_waits.push_back(state_[j].first_start - jobs_[j].submit);
    } else {
      low_waits.push_back(state_[j].start - jobs_[j].submit);
    }
  }
  double ignored = 0;
  sim::MeanAndP95(high_waits, &m.high_mean_wait_s, &m.high_p95_wait_s);
  sim::MeanAndP95(low_waits, &m.low_mean_wait_s, &ignored);
  int in_min = 0;
  for (const PreemptionEvent& e : events_) {
    m.victims += static_cast<int>(e.victims.size());
    m.lost_gpu_hours += e.lost_gpu_hours;
    m.preempting_mean_domains += e.domains;
    m.preempting_mean_racks += e.racks;
    if (e.domains <= e.min_domains) ++in_min;
  }
  m.preemptions = static_cast<int>(events_.size());
  if (m.preemptions > 0) {
    m.preempting_min_domain_pct = 100.0 * in_min / m.preemptions;
    m.preempting_mean_domains /= m.preemptions;
    m.preempting_mean_racks /= m.preemptions;
  }
  m.power_violation_kws = meter_.rack_violation_kws() + meter_.domain_violation_kws();
  m.cap_excursions = meter_.cap_excursions();
  if (m.completed > 0) m.makespan_s = last_end_ - first_submit;
  out.preemptions = events_;
  return out;
}

}  // namespace

absl::StatusOr<PreemptionPolicy> ParsePreemptionPolicy(std::string_view name) {
  if (name == "rackwise") return PreemptionPolicy::kRackwise;
  if (name == "priority-order") return PreemptionPolicy::kPriorityOrder;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown preemption policy '", std::string(name), "' (expected rackwise or priority-order)"));
}

const char* PreemptionPolicyName(PreemptionPolicy policy) {
  return policy == PreemptionPolicy::kRackwise ? "rackwise" : "priority-order";
}

absl::StatusOr<PreemptionReplayResult> SimulatePreemption(const Topology& topology, const std::vector<TraceJob>& jobs,
                                                          const PreemptionReplayOptions& options) {
  if (absl::Status s = sim::CheckReplayInputs(topology, jobs, SimOptions{}); !s.ok()) return s;
  for (const TraceJob& j : jobs) {
    if (j.priority < -kMaxPreemptionPriority || j.priority > kMaxPreemptionPriority) {
      return absl::InvalidArgumentError(absl::StrCat("job ", j.id, ": priority out of range"));
    }
  }
  PreemptionReplay replay(topology, jobs, options);
  if (absl::Status s = replay.Run(); !s.ok()) return s;
  return replay.Result();
}

}  // namespace rackwise
