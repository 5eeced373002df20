// rackwise, first-fit, capped-first-fit and spread for the simulator; tree-bestfit and static-cap are in
// simulator_tree.cc.
#include "simulator_policies.h"

#include <algorithm>
#include <bit>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "rackwise/fallback_order.h"
#include "rackwise/placer.h"
#include "rackwise/power_rollup.h"
#include "rackwise/rack_free_gpus.h"

namespace rackwise::sim {

int MinDomains(const Topology& topology, int gpus, int gpus_per_node) {
  int fewest = 0;
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(topology.node_types().size()); ++type) {
    const NodeType& nt = topology.node_types()[type];
    int size = 0;
    if (nt.nvlink == NvlinkScope::kNode) {
      size = gpus_per_node > 0 ? (nt.gpus >= gpus_per_node ? gpus_per_node : 0) : nt.gpus;
    } else {
      size = gpus_per_node > 0 ? (nt.gpus >= gpus_per_node ? topology.max_domain_nodes(type) * gpus_per_node : 0)
                               : topology.max_domain_gpus(type);
    }
    if (size <= 0) continue;
    const int n = (gpus + size - 1) / size;
    fewest = fewest == 0 ? n : std::min(fewest, n);
  }
  return fewest;
}

std::vector<int> StaticRackLimits(const Topology& t) {
  const auto& racks = t.racks();
  std::vector<long long> own(racks.size(), 0);
  for (size_t r = 0; r < racks.size(); ++r) {
    long long gpus = 0;
    Milliwatts per_gpu = 0;
    for (NodeId n : racks[r].nodes) {
      gpus += t.nodes()[n].gpus;
      per_gpu = std::max(per_gpu, t.type_of(n).per_gpu);
    }
    const Milliwatts spare = racks[r].cap - racks[r].idle;
    own[r] = per_gpu > 0 ? std::clamp<long long>(spare / per_gpu, 0, gpus) : gpus;
  }
  // A power domain allows (cap - idle) / per_gpu GPUs; its racks share that in proportion to their own limits.
  std::vector<long long> under(t.power_domains().size(), 0), allow(t.power_domains().size(), 0);
  std::vector<Milliwatts> pd_per_gpu(t.power_domains().size(), 0);
  for (size_t r = 0; r < racks.size(); ++r) {
    Milliwatts per_gpu = 0;
    for (NodeId n : racks[r].nodes) per_gpu = std::max(per_gpu, t.type_of(n).per_gpu);
    for (PowerDomainId p : racks[r].power_chain) {
      under[p] += own[r];
      pd_per_gpu[p] = std::max(pd_per_gpu[p], per_gpu);
    }
  }
  for (size_t p = 0; p < allow.size(); ++p) {
    const Milliwatts spare = t.power_domains()[p].cap - t.power_domains()[p].idle;
    allow[p] = pd_per_gpu[p] > 0 ? std::max<long long>(0, spare / pd_per_gpu[p]) : under[p];
  }
  std::vector<int> limit(racks.size(), 0);
  for (size_t r = 0; r < racks.size(); ++r) {
    long long l = own[r];
    for (PowerDomainId p : racks[r].power_chain) {
      if (under[p] > allow[p] && under[p] > 0) l = std::min(l, own[r] * allow[p] / under[p]);
    }
    limit[r] = static_cast<int>(l);
  }
  return limit;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

Milliwatts JobWatts(const TraceJob& job) { return job.watts_per_gpu > 0 ? WattsToMilliwatts(job.watts_per_gpu) : 0; }

// The most GPUs a job could ever get on one node type (an empty, healthy cluster), for kNever.
long long LifetimeGpus(const Topology& t, NodeTypeId type, int k) {
  long long total = 0;
  for (const Node& n : t.nodes()) {
    if (n.type != type) continue;
    total += k > 0 ? (n.gpus / k) * k : n.gpus;
  }
  return total;
}

class RackwisePolicy : public Policy {
 public:
  RackwisePolicy(const Topology& t, bool use_bound)
      : t_(t), use_bound_(use_bound), below_(t.power_domains().size(), 0) {
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
      const Milliwatts w = t.node_types()[type].per_gpu;
      min_type_per_gpu_ = type == 0 ? w : std::min(min_type_per_gpu_, w);
      min_domain_gpus_ = type == 0 ? t.max_domain_gpus(type) : std::min(min_domain_gpus_, t.max_domain_gpus(type));
    }
  }

  Outcome Choose(const Ledger& ledger, const TraceJob& job, const Pending& pending, bool backfill,
                 Choice* choice) override {
    // Whether a request can ever be placed does not depend on the cluster's state: the placer says so the first
    // time a request of this shape is seen, and from then on the cheap bound may answer "wait" in its place.
    const auto shape = std::make_tuple(job.gpus, job.gpus_per_node, job.locality ? static_cast<int>(*job.locality) : -1,
                                       WattsToMilliwatts(job.watts_per_gpu));
    if (auto it = seen_shapes_.find(shape); it != seen_shapes_.end()) {
      if (!it->second) return Outcome::kNever;
      if (use_bound_ && !MightFit(ledger, job)) return Outcome::kWait;
    }
    PlacementRequest r;
    r.id = job.id;
    r.gpus = job.gpus;
    r.gpus_per_node = job.gpus_per_node;
    r.locality = job.locality;
    r.watts_per_gpu = job.watts_per_gpu;
    r.waited_seconds = pending.waited_s;
    r.fewest_domains_in_seconds = pending.fewest_in_s;
    r.time_limit_seconds = job.duration;  // the trace has no limit column (docs/simulation.md)
    // A backfilled `preferred` job follows the core's backfill rule (BackfillHoldsOut), as on the Slurm face.
    r.started_by_backfill = backfill;
    const bool decided_by_backfill_rule = UnderBackfillRule(r, t_.policy());
    // Whether a shape can ever run is decided once, by the full refusal; later refusals only need to say no.
    r.report_refusal = !decided_by_backfill_rule && !seen_shapes_.contains(shape);
    absl::StatusOr<PlacementOutcome> out = Placer::Place(ledger, r);
    const PlacementRefusal* refusal = out.ok() ? std::get_if<PlacementRefusal>(&*out) : nullptr;
    // Malformed for this cluster (e.g. watts beyond the policy), or too large for it: never. Held out, the job
    // may still run spread out as the head, so "never" is only decided as asked.
    const bool never = !out.ok() || (refusal && refusal->unresolvable);
    if (decided_by_backfill_rule) return !out.ok() ? Outcome::kNever : refusal ? Outcome::kWait : Start(*out, choice);
    seen_shapes_[shape] = !never;
    if (never) return Outcome::kNever;
    if (refusal) return Outcome::kWait;
    return Start(*out, choice);
  }
  CommitMode commit_mode() const override { return CommitMode::kEnforce; }
  bool holds_out_for_fewest() const override { return true; }

 private:
  static Outcome Start(const PlacementOutcome& out, Choice* choice) {
    const auto& d = std::get<PlacementDecision>(out);
    choice->nodes = d.nodes;
    choice->per_gpu = d.per_gpu;
    return Outcome::kStart;
  }

  // A necessary condition for any placement within the caps, in O(racks + domains), so that the placer (and its
  // node-by-node refusal report) is only asked when the job might fit. Rack r can take at most
  // g_r = min(usable free GPUs, room under its cap / watts per GPU); a power domain at most
  // min(sum of what is below it, its room / watts per GPU), deepest domains first. A `required` job that fits
  // one NVLink domain also needs one domain that can take it whole. If the bound falls short, the placer would
  // refuse too.
  bool MightFit(const Ledger& ledger, const TraceJob& job) {
    const Milliwatts per_gpu = job.watts_per_gpu > 0 ? WattsToMilliwatts(job.watts_per_gpu) : min_type_per_gpu_;
    if (per_gpu <= 0) return true;
    const double reserve = t_.policy().power_reserve_fraction;
    const int k = job.gpus_per_node;
    bool one_domain = false;
    const bool want_one = job.locality == Locality::kRequired && (k == 0 || k == job.gpus);
    // From the ledger's per-rack tallies (rack_free_gpus.h), not domain by domain or node by node.
    auto rack_free = [&](RackId r) {
      const RackFreeGpus free = RackFreeFor(ledger, r, k);
      if (want_one && !one_domain && free.largest_domain >= job.gpus &&
          ledger.RackRoom(r, reserve) / per_gpu >= job.gpus)
        one_domain = ledger.RackHeadroom(r, reserve) / per_gpu >= job.gpus;
      return free.usable;
    };
    const long long total = PowerLimitedGpus(
        t_, per_gpu, rack_free, [&](RackId r) { return ledger.RackRoom(r, reserve); },
        [&](PowerDomainId p) { return ledger.PowerDomainRoom(p, reserve); }, &below_);
    if (total < job.gpus) return false;
    if (want_one && job.gpus <= min_domain_gpus_ && !one_domain) return false;
    return true;
  }

  const Topology& t_;
  bool use_bound_;
  Milliwatts min_type_per_gpu_ = 0;
  int min_domain_gpus_ = 0;       // the smallest "largest domain" over node types
  std::vector<long long> below_;  // per power domain, scratch
  absl::flat_hash_map<std::tuple<int, int, int, Milliwatts>, bool> seen_shapes_;  // shape -> can ever run
};

// Shared by first-fit and spread: which node types could ever hold the job.
class NodeListPolicy : public Policy {
 public:
  explicit NodeListPolicy(const Topology& t) : t_(t), by_type_(t.node_types().size()) {
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) by_type_[t.nodes()[n].type].push_back(n);
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(by_type_.size()); ++type) {
      lifetime_.emplace_back();
      for (int k = 0; k <= t.node_types()[type].gpus; ++k) lifetime_.back().push_back(LifetimeGpus(t, type, k));
    }
  }

  Outcome Choose(const Ledger& ledger, const TraceJob& job, const Pending& pending, bool backfill,
                 Choice* choice) override {
    bool ever = false;
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(by_type_.size()); ++type) {
      if (job.gpus_per_node > t_.node_types()[type].gpus) continue;
      if (lifetime_[type][job.gpus_per_node] < job.gpus) continue;
      ever = true;
      choice->nodes.clear();
      if (Fill(ledger, job, type, &choice->nodes)) {
        choice->per_gpu = JobWatts(job);
        return Outcome::kStart;
      }
    }
    return ever ? Outcome::kWait : Outcome::kNever;
  }

 protected:
  virtual bool Fill(const Ledger& ledger, const TraceJob& job, NodeTypeId type, std::vector<NodeGpus>* out) = 0;
  const Topology& t_;
  std::vector<std::vector<NodeId>> by_type_;
  std::vector<std::vector<long long>> lifetime_;  // [type][gpus_per_node]
};

class FirstFitPolicy : public NodeListPolicy {
 public:
  using NodeListPolicy::NodeListPolicy;

 protected:
  bool Fill(const Ledger& ledger, const TraceJob& job, NodeTypeId type, std::vector<NodeGpus>* out) override {
    const int k = job.gpus_per_node;
    const std::vector<NodeId>& nodes = by_type_[type];
    if (k == 0 && job.gpus <= t_.node_types()[type].gpus) {
      for (NodeId n : nodes) {  // a job that fits one node goes to the first node with room
        if (ledger.free_gpu_count(n) >= job.gpus) {
          out->push_back({n, LowestGpus(ledger.free_gpus(n), job.gpus)});
          return true;
        }
      }
    }
    int remaining = job.gpus;
    for (NodeId n : nodes) {
      const int free = ledger.free_gpu_count(n);
      const int take = k > 0 ? (free >= k ? k : 0) : std::min(free, remaining);
      if (take == 0) continue;
      out->push_back({n, LowestGpus(ledger.free_gpus(n), take)});
      remaining -= take;
      if (remaining == 0) return true;
    }
    return false;
  }
};

// capped-first-fit: first-fit that never exceeds a cap less the policy's reserve, the simplest scheduler that is
// legal under the caps. A node's share is taken only if its rack and every power domain above it can still power
// it (an any-split job takes what they can power); nothing about NVLink domains or rails.
class CappedFirstFitPolicy : public NodeListPolicy {
 public:
  explicit CappedFirstFitPolicy(const Topology& t)
      : NodeListPolicy(t), spent_(t.racks().size(), t.power_domains().size()) {}
  CommitMode commit_mode() const override { return CommitMode::kEnforce; }

 protected:
  bool Fill(const Ledger& ledger, const TraceJob& job, NodeTypeId type, std::vector<NodeGpus>* out) override {
    const int k = job.gpus_per_node;
    const Milliwatts per_gpu =
        job.watts_per_gpu > 0 ? WattsToMilliwatts(job.watts_per_gpu) : t_.node_types()[type].per_gpu;
    const double reserve = t_.policy().power_reserve_fraction;
    spent_.Clear();
    auto powered = [&](NodeId n) -> long long {  // GPUs of this job the node's rack and feeds can still power
      const RackId r = t_.nodes()[n].rack;
      Milliwatts room = ledger.RackRoom(r, reserve) - spent_.rack(r);
      for (PowerDomainId p : t_.racks()[r].power_chain)
        room = std::min(room, ledger.PowerDomainRoom(p, reserve) - spent_.power_domain(p));
      if (per_gpu <= 0) return job.gpus;
      return std::max<Milliwatts>(0, room) / per_gpu;
    };
    const std::vector<NodeId>& nodes = by_type_[type];
    if (k == 0 && job.gpus <= t_.node_types()[type].gpus) {
      for (NodeId n : nodes) {  // a job that fits one node goes to the first node with room and power
        if (ledger.free_gpu_count(n) >= job.gpus && powered(n) >= job.gpus) {
          out->push_back({n, LowestGpus(ledger.free_gpus(n), job.gpus)});
          return true;
        }
      }
    }
    int remaining = job.gpus;
    for (NodeId n : nodes) {
      const int free = ledger.free_gpu_count(n);
      const long long power = powered(n);
      const int take =
          k > 0 ? (free >= k && power >= k ? k : 0) : static_cast<int>(std::min<long long>({free, remaining, power}));
      if (take == 0) continue;
      out->push_back({n, LowestGpus(ledger.free_gpus(n), take)});
      spent_.Add(t_.racks()[t_.nodes()[n].rack], t_.nodes()[n].rack, static_cast<Milliwatts>(take) * per_gpu);
      remaining -= take;
      if (remaining == 0) return true;
    }
    return false;
  }

 private:
  PowerScratch spent_;  // what this job's shares so far draw, per rack and power domain
};

class SpreadPolicy : public NodeListPolicy {
 public:
  using NodeListPolicy::NodeListPolicy;

 protected:
  bool Fill(const Ledger& ledger, const TraceJob& job, NodeTypeId type, std::vector<NodeGpus>* out) override {
    const int node_gpus = t_.node_types()[type].gpus;
    std::vector<int> pods;
    if (job.gpus_per_node > 0) {
      pods.assign(job.gpus / job.gpus_per_node, job.gpus_per_node);
    } else {
      for (int left = job.gpus; left > 0; left -= node_gpus) pods.push_back(std::min(left, node_gpus));
    }
    // GPUs this job has taken so far, per node (pods of one job may share a node).
    if (taken_.size() != t_.nodes().size()) taken_.assign(t_.nodes().size(), 0);
    for (const NodeGpus& g : *out) taken_[g.node] = 0;
    const uint64_t job_hash = Fnv1a(job.id);
    for (int pod_index = 0; pod_index < static_cast<int>(pods.size()); ++pod_index) {
      const int pod = pods[pod_index];
      NodeId best = kNoId;
      double best_score = -1;
      uint64_t best_tie = 0;
      for (NodeId n : by_type_[type]) {
        const int free = ledger.free_gpu_count(n) - taken_[n];
        if (free < pod) continue;
        const double score = static_cast<double>(free) / t_.nodes()[n].gpus;  // least allocated
        // kube-scheduler picks at random among the best-scored nodes; a hash of (job, pod, node) keeps it
        // reproducible.
        const uint64_t tie = Mix(job_hash ^ (static_cast<uint64_t>(pod_index) << 32) ^ static_cast<uint64_t>(n));
        if (score > best_score || (score == best_score && tie > best_tie)) {
          best_score = score;
          best_tie = tie;
          best = n;
        }
      }
      if (best == kNoId) {
        for (const NodeGpus& g : *out) taken_[g.node] = 0;
        return false;
      }
      auto it = std::find_if(out->begin(), out->end(), [best](const NodeGpus& g) { return g.node == best; });
      const GpuMask already = it == out->end() ? 0 : it->gpus;
      const GpuMask add = LowestGpus(ledger.free_gpus(best) & ~already, pod);
      if (it == out->end()) {
        out->push_back({best, add});
      } else {
        it->gpus |= add;
      }
      taken_[best] += pod;
    }
    for (const NodeGpus& g : *out) taken_[g.node] = 0;
    return true;
  }

 private:
  std::vector<int> taken_;  // per node, zero between calls
};

}  // namespace

std::unique_ptr<Policy> MakeTreePolicy(const Topology& topology, bool static_cap);  // simulator_tree.cc

std::unique_ptr<Policy> MakePolicy(SimPolicy policy, const Topology& topology, const SimOptions& options) {
  switch (policy) {
    case SimPolicy::kRackwise: return std::make_unique<RackwisePolicy>(topology, options.placer_bound);
    case SimPolicy::kFirstFit: return std::make_unique<FirstFitPolicy>(topology);
    case SimPolicy::kSpread: return std::make_unique<SpreadPolicy>(topology);
    case SimPolicy::kTreeBestFit: return MakeTreePolicy(topology, false);
    case SimPolicy::kStaticCap: return MakeTreePolicy(topology, true);
    case SimPolicy::kCappedFirstFit: return std::make_unique<CappedFirstFitPolicy>(topology);
  }
  return nullptr;
}

}  // namespace rackwise::sim
