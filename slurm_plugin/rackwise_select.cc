// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: job_test. Has the job record, its candidate node bitmap
// and its GRES selection translated into a PlacementRequest (job_translation.h), asks the Placer, and narrows
// cons_tres's candidates to the decision (rackwise_select_ledger.cc has loading and the ledger hooks).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu_selection.h"
#include "rackwise/fallback_order.h"
#include "rackwise/oversubscription.h"
#include "rackwise/placer.h"
#include "rackwise/start_guard.h"
#include "rackwise_select.h"  // after the C++ headers: it ends with Slurm's (macro-heavy) headers
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr size_t kMaxFeasibleCache = 200000;  // job ids; cleared when full (it is only a shortcut)

}  // namespace

int RackwiseSelect::InnerTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                              uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                              SlurmList* preemptee_job_list, const JobTestTail& tail) {
  const auto start = std::chrono::steady_clock::now();
  const int rc = CallJobTest(*inner_, job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                             preemptee_job_list, tail);
  inner_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  ++inner_calls_;
  return rc;
}

void RackwiseSelect::SetPendingReason(job_record_t* job, const std::string& why) {
  std::string text = why.rfind("rackwise:", 0) == 0 ? why : "rackwise: " + why;
  reasons_.Note(job->job_id, text);  // select_nodes() may clear it (Slurm >= 23.11): put back afterwards
  if (job->state_desc && text == job->state_desc && job->state_reason == kPendingReason) return;
  xfree(job->state_desc);
  job->state_desc = xstrdup(text.c_str());
  job->state_reason = kPendingReason;
  debug("rackwise: JobId=%u pending: %s", job->job_id, text.c_str());
}

int RackwiseSelect::JobTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                            uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                            SlurmList* preemptee_job_list, const JobTestTail& tail) {
  std::lock_guard lock(mu_);
  reasons_.ApplyLocked();
  inner_ns_ = 0;
  inner_calls_ = 0;
  const auto start = std::chrono::steady_clock::now();
  const int rc =
      JobTestLocked(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list, tail);
  if (get_log_level() >= LOG_LEVEL_DEBUG2 && job) {
    const int64_t total =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    debug2("rackwise: JobId=%u job_test mode %u rc %d: %" PRId64 " us, of which cons_tres %" PRId64 " us in %d calls",
           job->job_id, mode, rc, total / 1000, inner_ns_ / 1000, inner_calls_);
  }
  return rc;
}

int RackwiseSelect::JobTestLocked(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                  uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                                  SlurmList* preemptee_job_list, const JobTestTail& tail) {
  const uint16_t base = mode & SELECT_MODE_BASE;
  const auto inner = [&] {
    return InnerTest(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list,
                     tail);
  };
  if (!model_ || !job || !bitmap || base == SELECT_MODE_RESV) return inner();
  shared_.SweepUnconfirmedLocked(job->job_id, &model_->ledger());
  const GpuAsk ask = ReadGpuAsk(job, gpu_plugin_id_);
  if (ask.gpus == 0) return inner();  // not a GPU job: cons_tres alone

  if (base == SELECT_MODE_RUN_NOW) {
    if (const std::string& mismatch = description_.mismatch(); !mismatch.empty() || !shared_.error().empty()) {
      SetPendingReason(job, mismatch.empty() ? shared_.error() : mismatch);
      return SLURM_ERROR;
    }
    if (!SkipNodesWithoutProlog(job, bitmap)) return SLURM_ERROR;
    return RunNow(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list, tail,
                  ask);
  }
  // TEST_ONLY (submit) and WILL_RUN (backfill, --test-only): only what can never fit is refused here;
  // live power is judged when the job would start.
  // Backfill asks this for every pending job every cycle; a job found feasible stays so until the
  // description changes, so the answer is remembered.
  std::optional<PlacementRequest> request;  // made at most once per call
  if (ask.translated && !statically_feasible_.contains(job->job_id)) {
    request = MakeRequest(job, ask, bitmap, *model_, time(nullptr));
    if (!request) return inner();  // no described (GPU) node offered: cons_tres refuses
    absl::StatusOr<PlacementOutcome> outcome = Placer::Place(model_->static_ledger(), *request);
    // Only a submit-time test sees every node the job may use; backfill's test (WILL_RUN) sees the nodes free
    // in one time slot, so a refusal there means "not in this slot", never "never".
    const bool whole_partition = base == SELECT_MODE_TEST_ONLY;
    if (!outcome.ok()) {
      info("rackwise: JobId=%u cannot run: %s", job->job_id, std::string(outcome.status().message()).c_str());
      return SLURM_ERROR;
    }
    if (const auto* refusal = std::get_if<PlacementRefusal>(&*outcome); refusal && refusal->unresolvable) {
      if (whole_partition) {
        info("rackwise: JobId=%u can never run here: %s", job->job_id, refusal->Message().c_str());
      } else {
        debug2("rackwise: JobId=%u does not fit the %zu nodes of this backfill slot", job->job_id,
               request->allowed_nodes.size());
      }
      return SLURM_ERROR;
    }
    if (statically_feasible_.size() >= kMaxFeasibleCache) statically_feasible_.clear();
    statically_feasible_[job->job_id] = request->locality.value_or(model_->topology().policy().default_locality);
  }
  // Only a `required` job's will-run test is narrowed; the locality was kept with the static answer, so that
  // backfill's test of any other job builds no request.
  if (base == SELECT_MODE_WILL_RUN && ask.translated) {
    const auto feasible = statically_feasible_.find(job->job_id);
    if (feasible != statically_feasible_.end() && feasible->second == Locality::kRequired) {
      if (!request) request = MakeRequest(job, ask, bitmap, *model_, time(nullptr));
      if (request) KeepFewestTypesForWillRunLocked(*request, bitmap);
    }
  }
  return inner();
}

void RackwiseSelect::KeepFewestTypesForWillRunLocked(const PlacementRequest& request, bitstr_t* bitmap) {
  const Topology& topology = model_->topology();
  const absl::StatusOr<Placer::Fewest> fewest = Placer::FewestDomains(model_->static_ledger(), request);
  if (!fewest.ok() || fewest->types.empty()) return;
  for (int i : BitmapIndices(bitmap)) {
    const NodeId node = model_->ToNode(i);
    if (node == kNoId) continue;  // not described: cons_tres's to judge
    if (std::find(fewest->types.begin(), fewest->types.end(), topology.nodes()[node].type) == fewest->types.end())
      bit_clear(bitmap, i);
  }
}

int64_t RackwiseSelect::PrologSkipWindow() {
  return PrologSkipWindowSeconds(slurm_conf.authinfo ? slurm_conf.authinfo : "", slurm_conf.kill_wait);
}

bool RackwiseSelect::SkipNodesWithoutProlog(job_record_t* job, bitstr_t* bitmap) {
  int64_t wait_s = 0;
  const std::vector<NodeId> avoid = departures_.Avoid(job->job_id, time(nullptr), PrologSkipWindow(), &wait_s);
  if (avoid.empty()) return true;
  std::string names;
  for (NodeId n : avoid) {
    const int i = model_->ToSlurm(n);
    if (i < 0 || i >= bit_size(bitmap) || !bit_test(bitmap, i)) continue;
    bit_clear(bitmap, i);
    absl::StrAppend(&names, names.empty() ? "" : ",", model_->topology().nodes()[n].name);
  }
  if (names.empty()) return true;
  const JobDetails* details = job->details;
  bool usable_left = false;
  for (int i : BitmapIndices(bitmap)) usable_left |= model_->ToNode(i) != kNoId;
  if (usable_left && !(details && details->req_node_bitmap && !bit_super_set(details->req_node_bitmap, bitmap))) {
    return true;
  }
  SetPendingReason(job, absl::StrCat("requeued job waits ", wait_s, " s more for ", names,
                                     ": slurmd there would skip its prolog, which sets its GPU power limits, until "
                                     "AuthInfo cred_expire has passed since it left"));
  return false;
}

bool RackwiseSelect::AdmitLocked(const job_record_t* job, const bitstr_t* nodes, std::string* why) {
  std::optional<Allocation> allocation = SelectedGpus(job, nodes, *model_, gpu_plugin_id_);
  if (!allocation) return true;  // no GPUs on described nodes: nothing to charge or reserve
  CountAsPlacedLocked(&*allocation);
  const std::string id = allocation->id;
  allocation->id = "probe/" + id;
  // The usable cap, not the raw one: what Slurm starts must keep the reserve exactly as the Placer does.
  absl::Status status = CheckWithinUsableCaps(model_->ledger(), *allocation);
  if (!status.ok()) {
    *why = std::string(status.message());
    return false;
  }
  // What the job may start on, for the judgement at its start (CommitJobLocked).
  allocation->id = id;
  if (approved_.size() >= kMaxApprovals) approved_.clear();  // only unstarted jobs' leftovers can pile up
  const Allocation& approved = approved_.insert_or_assign(job->job_id, *std::move(allocation)).first->second;
  // The shared ledger has the last word (no-op without one).
  return !shared_.active() || shared_.ReserveLocked(job->job_id, approved, why);
}

void RackwiseSelect::CountOversubscribedLocked(const job_record_t* job, PlacementRequest* request) {
  // The core says whether the job counts at less than it declares (the telemetry state is this face's fact); the
  // GPUs' limit stays what it declares (the prolog sets that), and steering gets the declared watts back.
  const OversubscribedWatts count = CountOversubscribed(model_->topology(), *request, power_.telemetry().settings(),
                                                        power_.telemetry().tracker().state());
  oversubscribed_.Placed(request->id, count);
  if (count.applied) {
    debug("rackwise: JobId=%u counted oversubscribed: %.0f W per GPU (declared %.0f W)", job->job_id,
          count.counted_watts_per_gpu, count.declared_watts_per_gpu);
  } else if (!count.why_not.empty() && count.why_not != oversubscription_off_) {
    info("rackwise: JobId=%u: %s", job->job_id, count.why_not.c_str());  // logged once per reason in a row
  }
  if (count.applied || !count.why_not.empty()) oversubscription_off_ = count.why_not;
  *request = WithOversubscription(*request, count);
}

// Why a `preferred` job that the backfill scheduler tried did not start spread out.
constexpr char kBackfillHoldOut[] =
    " (backfill: a --nvlink=preferred job started ahead of its turn takes only its fewest NVLink domains on node "
    "types that can give them)";

int RackwiseSelect::RunNow(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                           uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                           SlurmList* preemptee_job_list, const JobTestTail& tail, const GpuAsk& ask) {
  SyncHealthLocked();
  power_.ApplyLocked(model_.get(), oversubscribed_);
  approved_.erase(job->job_id);  // an earlier try's approval does not cover what this try lets through
  if (std::optional<std::string> waiting = preemption_.WaitingForVictimsLocked(job->job_id, model_->ledger())) {
    SetPendingReason(job, *waiting);  // no further victims are chosen for it meanwhile
    return SLURM_ERROR;
  }
  // Tried again after a try whose job did not start: that try's reservation is not this one's to count.
  if (shared_.active() && !IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job)) ReleaseJobLocked(JobId(job));
  if (!ask.translated) {
    // A shape the core does not model: cons_tres places it, the ledger still guards the caps (at what it declares).
    std::string power_why;
    oversubscribed_.Forget(JobId(job));
    ClearGpuSelection(job, gpu_plugin_id_);
    int rc =
        InnerTest(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list, tail);
    if (rc != SLURM_SUCCESS) return rc;
    if (AdmitLocked(job, bitmap, &power_why)) return SLURM_SUCCESS;
    SetPendingReason(job, power_why + shared_.NoteLocked());
    return SLURM_ERROR;
  }

  std::optional<PlacementRequest> offered = MakeRequest(job, ask, bitmap, *model_, time(nullptr), usable_nodes_.get());
  if (!offered) {
    // No described GPU node among those offered: the job cannot start on GPUs rackwise knows, and cons_tres alone
    // refuses a GPU job there or places it on nodes the description does not list (not the core's to judge).
    return InnerTest(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates, preemptee_job_list,
                     tail);
  }
  PlacementRequest& request = *offered;
  // The backfill scheduler starts jobs ahead of their turn (the main scheduler stops at a partition's first job
  // that cannot start): the core's hold-out rule says what such a job may take.
  request.started_by_backfill = (job->bit_flags & BACKFILL_SCHED) != 0;
  EstimateFewestDomainsLocked(job, &request);
  const bool backfill_hold_out = UnderBackfillRule(request, model_->topology().policy());
  CountOversubscribedLocked(job, &request);
  absl::StatusOr<PlacementOutcome> outcome = refusals_.Place(model_->ledger(), request);
  if (!outcome.ok()) {
    SetPendingReason(job, std::string(outcome.status().message()));
    return SLURM_ERROR;
  }
  if (const auto* refusal = std::get_if<PlacementRefusal>(&*outcome)) {
    const auto fit = [&](bitstr_t* nodes, uint32_t count, SlurmList victims, SlurmList* picked) {
      ClearGpuSelection(job, gpu_plugin_id_);
      return InnerTest(job, nodes, count, max_nodes, count, mode, victims, picked, tail);
    };
    if (std::optional<std::string> preempting =
            refusal->unresolvable ? std::nullopt
                                  : preemption_.PreemptForLocked(job, request, *model_, bitmap, min_nodes, max_nodes,
                                                                 preemptee_candidates, preemptee_job_list, fit)) {
      SetPendingReason(job, *preempting);  // slurmctld preempts the victims; the job starts once they are gone
      return SLURM_SUCCESS;
    }
    // The core's "never" is about the nodes it was offered, which here are only those usable now.
    const std::string why = refusal->unresolvable
                                ? absl::StrCat("the ", request.allowed_nodes.size(), " nodes usable now cannot hold ",
                                               request.gpus, " GPUs as asked")
                                : refusal->Message();
    SetPendingReason(job, absl::StrCat(why, backfill_hold_out ? kBackfillHoldOut : "", shared_.NoteLocked()));
    return SLURM_ERROR;
  }
  return PlaceAsDecidedLocked(job, bitmap, min_nodes, max_nodes, req_nodes, mode, preemptee_candidates,
                              preemptee_job_list, tail, request, std::get<PlacementDecision>(*outcome));
}

int RackwiseSelect::PlaceAsDecidedLocked(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                                         uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                                         SlurmList* preemptee_job_list, const JobTestTail& tail,
                                         const PlacementRequest& request, const PlacementDecision& decision) {
  std::string power_why;
  const Topology& topology = model_->topology();
  if (get_log_level() >= LOG_LEVEL_DEBUG) {
    std::string where;
    for (const NodeGpus& ng : decision.nodes) {
      absl::StrAppend(&where, where.empty() ? "" : " ", topology.nodes()[ng.node].name, ":0x", absl::Hex(ng.gpus));
    }
    debug("rackwise: JobId=%u core decision %s (%d domains, rail aligned %d)", job->job_id, where.c_str(),
          decision.domains, decision.rail_aligned ? 1 : 0);
  }
  const Locality locality = request.locality.value_or(topology.policy().default_locality);

  // cons_tres picks within a node set: offer the core's fallback order, most preferred first.
  const std::vector<std::vector<NodeId>> tiers = FallbackNodeSets(topology, decision, locality, request.allowed_nodes);

  const int size = bit_size(bitmap);
  int rc = SLURM_ERROR;
  int previous_count = -1;
  for (size_t t = 0; t < tiers.size(); ++t) {
    bitstr_t* candidate = bit_alloc(size);
    for (NodeId n : tiers[t]) {
      const int i = model_->ToSlurm(n);
      if (i >= 0 && i < size && bit_test(bitmap, i)) bit_set(candidate, i);
    }
    const int count = bit_set_count(candidate);
    const JobDetails* details = job->details;
    if (count == previous_count || count == 0 ||
        (details && details->req_node_bitmap && !bit_super_set(details->req_node_bitmap, candidate))) {
      FREE_NULL_BITMAP(candidate);
      continue;
    }
    previous_count = count;
    uint32_t tier_min = min_nodes, tier_req = req_nodes;
    if (t == 0) {  // ask cons_tres for exactly the core's node count
      const uint32_t k = static_cast<uint32_t>(decision.nodes.size());
      if (k >= min_nodes && k <= max_nodes) tier_min = k;
      tier_req = tier_min;
    }
    ClearGpuSelection(job, gpu_plugin_id_);  // no stale GPU picks of ours from an earlier try
    rc = InnerTest(job, candidate, tier_min, max_nodes, tier_req, mode, preemptee_candidates, preemptee_job_list, tail);
    if (rc == SLURM_SUCCESS) {
      // What Slurm will start is what the GPU selection now says: the core's decision where it could be
      // imposed, else cons_tres's own split, which is checked against the usable caps like any other.
      const bool exact = t == 0 && ApplyCoreDecision(job, decision, candidate, *model_, gpu_plugin_id_);
      // The shared ledger has the last word: what it refuses is tried in the next tier, like a local cap.
      if (AdmitLocked(job, candidate, &power_why)) {
        bit_copybits(bitmap, candidate);
        FREE_NULL_BITMAP(candidate);
        debug("rackwise: JobId=%u placed from preference tier %zu%s", job->job_id, t,
              exact ? " exactly as decided" : "");
        return SLURM_SUCCESS;
      }
      rc = SLURM_ERROR;
    }
    FREE_NULL_BITMAP(candidate);
  }
  if (!power_why.empty()) SetPendingReason(job, power_why + shared_.NoteLocked());
  return rc;
}

}  // namespace rackwise::slurm
