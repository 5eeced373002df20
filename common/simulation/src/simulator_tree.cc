// tree-bestfit (Slurm cons_tres + topology/tree, leaf switch = NVLink domain, the scalable unit above it) and
// static-cap (the same with per-rack GPU limits derived from the caps). Power-unaware apart from those limits.
#include <algorithm>
#include <bit>
#include <limits>

#include "simulator_policies.h"

namespace rackwise::sim {
namespace {

class TreePolicy : public Policy {
 public:
  TreePolicy(const Topology& t, bool static_cap)
      : t_(t), static_cap_(static_cap), raw_(t.domains().size()), rack_cap_(t.racks().size()), room_(t.racks().size()) {
    if (static_cap_) limit_ = StaticRackLimits(t);
    lifetime_.resize(t.node_types().size());
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
      for (int k = 0; k <= t.node_types()[type].gpus; ++k) {
        long long total = 0;
        for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
          long long in_rack = 0;
          for (NodeId n : t.racks()[r].nodes) {
            if (t.nodes()[n].type == type) in_rack += k > 0 ? (t.nodes()[n].gpus / k) * k : t.nodes()[n].gpus;
          }
          if (static_cap_) in_rack = std::min<long long>(in_rack, k > 0 ? limit_[r] / k * k : limit_[r]);
          total += in_rack;
        }
        lifetime_[type].push_back(total);
      }
    }
  }

  Outcome Choose(const Ledger& ledger, const TraceJob& job, const Pending& pending, bool backfill,
                 Choice* choice) override {
    const int k = job.gpus_per_node;
    bool ever = false;
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t_.node_types().size()); ++type) {
      if (k > t_.node_types()[type].gpus || lifetime_[type][k] < job.gpus) continue;
      ever = true;
      choice->nodes.clear();
      if (Fill(ledger, job, type, &choice->nodes)) {
        choice->per_gpu = job.watts_per_gpu > 0 ? WattsToMilliwatts(job.watts_per_gpu) : 0;
        return Outcome::kStart;
      }
    }
    return ever ? Outcome::kWait : Outcome::kNever;
  }

 private:
  int Usable(const Ledger& ledger, NodeId n, int k) const {
    const int free = ledger.free_gpu_count(n);
    return k > 0 ? (free >= k ? k : 0) : free;
  }

  // Fills raw_ (per domain of `type`) and rack_cap_/room_ (per rack).
  void Measure(const Ledger& ledger, NodeTypeId type, int k) {
    std::fill(rack_cap_.begin(), rack_cap_.end(), 0);
    for (DomainId d = 0; d < static_cast<DomainId>(t_.domains().size()); ++d) {
      raw_[d] = 0;
      if (t_.domains()[d].type != type) continue;
      for (NodeId n : t_.domains()[d].nodes) raw_[d] += Usable(ledger, n, k);
      rack_cap_[t_.domains()[d].rack] += raw_[d];
    }
    for (RackId r = 0; r < static_cast<RackId>(t_.racks().size()); ++r) {
      room_[r] = std::numeric_limits<int>::max();
      if (!static_cap_) continue;
      int used = 0;
      for (NodeId n : t_.racks()[r].nodes) used += GpuCount(ledger.allocated_gpus(n));
      room_[r] = std::max(0, limit_[r] - used);
      const int room = k > 0 ? room_[r] / k * k : room_[r];
      rack_cap_[r] = std::min(rack_cap_[r], room);
    }
  }

  int Effective(DomainId d) const { return std::min(raw_[d], rack_cap_[t_.domains()[d].rack]); }

  // Takes up to `want` GPUs from a domain, nodes in order, within the rack's room.
  int Take(const Ledger& ledger, DomainId d, int want, int k, std::vector<NodeGpus>* out) {
    int got = 0;
    int& room = room_[t_.domains()[d].rack];
    for (NodeId n : t_.domains()[d].nodes) {
      if (got == want) break;
      const int free = ledger.free_gpu_count(n);
      int take = k > 0 ? (free >= k && room >= k && want - got >= k ? k : 0) : std::min({free, want - got, room});
      if (take <= 0) continue;
      out->push_back({n, LowestGpus(ledger.free_gpus(n), take)});
      got += take;
      room -= take;
    }
    return got;
  }

  // Largest domains first (fewest leaves), until the job is placed.
  bool TakeFrom(const Ledger& ledger, std::vector<DomainId> domains, int gpus, int k, std::vector<NodeGpus>* out) {
    std::sort(domains.begin(), domains.end(), [&](DomainId a, DomainId b) {
      const int ea = Effective(a), eb = Effective(b);
      return ea != eb ? ea > eb : a < b;
    });
    int remaining = gpus;
    for (DomainId d : domains) {
      if (remaining == 0) break;
      if (Effective(d) > 0) remaining -= Take(ledger, d, remaining, k, out);
    }
    return remaining == 0;
  }

  bool Fill(const Ledger& ledger, const TraceJob& job, NodeTypeId type, std::vector<NodeGpus>* out) {
    const int k = job.gpus_per_node;
    Measure(ledger, type, k);
    // 1. The best-fitting single leaf (NVLink domain).
    DomainId best = kNoId;
    for (DomainId d = 0; d < static_cast<DomainId>(t_.domains().size()); ++d) {
      if (t_.domains()[d].type != type) continue;
      const int e = Effective(d);
      if (e >= job.gpus && (best == kNoId || e < Effective(best))) best = d;
    }
    if (best != kNoId) return Take(ledger, best, job.gpus, k, out) == job.gpus;
    // 2. The best-fitting scalable unit (the switch above the leaves).
    int best_su = -1;
    long long best_su_cap = 0;
    for (int su = 0; su < static_cast<int>(t_.scalable_units().size()); ++su) {
      long long cap = 0;
      for (RackId r : t_.scalable_units()[su].racks) cap += rack_cap_[r];
      if (cap >= job.gpus && (best_su < 0 || cap < best_su_cap)) {
        best_su = su;
        best_su_cap = cap;
      }
    }
    std::vector<DomainId> domains;
    if (best_su >= 0) {
      for (RackId r : t_.scalable_units()[best_su].racks) {
        for (DomainId d : t_.racks()[r].domains) {
          if (t_.domains()[d].type == type) domains.push_back(d);
        }
      }
      if (TakeFrom(ledger, domains, job.gpus, k, out)) return true;
      out->clear();
      Measure(ledger, type, k);
    }
    // 3. The whole cluster.
    domains.clear();
    long long total = 0;
    for (RackId r = 0; r < static_cast<RackId>(t_.racks().size()); ++r) total += rack_cap_[r];
    if (total < job.gpus) return false;
    for (DomainId d = 0; d < static_cast<DomainId>(t_.domains().size()); ++d) {
      if (t_.domains()[d].type == type) domains.push_back(d);
    }
    return TakeFrom(ledger, domains, job.gpus, k, out);
  }

  const Topology& t_;
  bool static_cap_;
  std::vector<int> limit_;                        // static-cap: GPUs each rack may hold
  std::vector<std::vector<long long>> lifetime_;  // [type][gpus_per_node]
  std::vector<int> raw_;                          // per domain: usable GPUs now
  std::vector<int> rack_cap_;                     // per rack: usable GPUs now, within the room
  std::vector<int> room_;                         // per rack: GPUs static-cap still allows
};

}  // namespace

std::unique_ptr<Policy> MakeTreePolicy(const Topology& topology, bool static_cap) {
  return std::make_unique<TreePolicy>(topology, static_cap);
}

}  // namespace rackwise::sim
