// Capacity arithmetic for one request on one node type. See placement_context.h.
#include "placement_context.h"
#include "placement_indexes.h"

#include <algorithm>

namespace rackwise::internal {

PlacementContext::PlacementContext(const Ledger& ledger, const PlacementRequest& request, Locality locality,
                                   NodeTypeId type, Milliwatts per_gpu, const std::vector<char>& allowed)
    : ledger_(ledger),
      topology_(ledger.topology()),
      request_(request),
      locality_(locality),
      type_(type),
      per_gpu_(per_gpu),
      allowed_(allowed),
      reserve_(ledger.topology().policy().power_reserve_fraction) {
  const NodeType& t = topology_.node_types()[type];
  if (t.nvlink == NvlinkScope::kNode) {
    effective_domain_size_ = NodeShare(t.gpus);
  } else {
    // Whole nodes of any size give all their GPUs to an any-split job; otherwise each node gives its share.
    effective_domain_size_ =
        AnyCount() ? topology_.max_domain_gpus(type) : topology_.max_domain_nodes(type) * NodeShare(t.gpus);
  }
}

int PlacementContext::DomainsBySize() const {
  return effective_domain_size_ > 0 ? (gpus() + effective_domain_size_ - 1) / effective_domain_size_ : 0;
}

int PlacementContext::MinDomains() const {
  const int fewest = FewestDomainsEver();
  return fewest > 0 ? fewest : DomainsBySize();  // 0 from the first: it cannot fit; the refusal says so
}

int PlacementContext::FewestDomainsEver() const {
  const int by_size = DomainsBySize();
  if (by_size <= 0) return 0;
  // Caps can make domains smaller than their GPUs, and a row's cap can keep its racks from all running full:
  // on the cluster as described and empty, the fewest domains the caps allow (exact: fewest_domains.h). The
  // largest rooms first usually reach ceil(gpus / domain size), which nothing beats; only if not, the search.
  if (!restricted() && GreedyDomainsOnEmptyCluster() <= by_size) return by_size;
  const FewestDomains fewest = FewestOnEmptyCluster();
  return fewest.count > 0 ? std::max(fewest.count, by_size) : 0;
}

EmptyClusterMemo::Shape PlacementContext::EmptyClusterShape() const {
  return {type_, gpus(), k(), granule(), per_gpu_};
}

int PlacementContext::GreedyDomainsOnEmptyCluster() const {
  EmptyClusterMemo& memo = IndexesOf(ledger_).empty_cluster_memo();
  const EmptyClusterMemo::Shape shape = EmptyClusterShape();
  if (std::optional<int> known = memo.Find(shape).greedy_domains) return *known;
  const int domains = WorkOutGreedyDomainsOnEmptyCluster();
  memo.KeepGreedy(shape, domains);
  return domains;
}

int PlacementContext::NominalOffer(const Topology::DomainRoom& d) const {
  if (AnyCount()) return d.gpus;
  const NodeType& t = topology_.node_types()[type_];
  return d.nodes * NodeShare(t.nvlink == NvlinkScope::kNode ? d.gpus : t.gpus);
}

int PlacementContext::WorkOutGreedyDomainsOnEmptyCluster() const {
  const double reserve = reserve_;
  auto room = [reserve](Milliwatts cap, Milliwatts idle) { return UsableCap(cap, reserve) - idle; };
  PowerScratch used(topology_.racks().size(), topology_.power_domains().size());
  long long sum = 0;
  int count = 0;
  for (const Topology::DomainRoom& d : topology_.domain_rooms(type_)) {
    const int nominal = NominalOffer(d);
    int cap = nominal;
    const RackId r = topology_.domains()[d.domain].rack;
    const Rack& rack = topology_.racks()[r];
    if (per_gpu_ > 0) {
      Milliwatts left = room(rack.cap, rack.idle) - used.rack(r);
      for (PowerDomainId p : rack.power_chain)
        left = std::min(
            left, room(topology_.power_domains()[p].cap, topology_.power_domains()[p].idle) - used.power_domain(p));
      cap = static_cast<int>(std::min<Milliwatts>(nominal, std::max<Milliwatts>(0, left) / per_gpu_));
    }
    cap = RoundDown(std::min<long long>(cap, gpus() - sum));
    if (cap <= 0) continue;
    used.Add(rack, r, static_cast<Milliwatts>(cap) * per_gpu_);
    sum += cap;
    ++count;
    if (sum >= gpus()) return count;
  }
  return kUnlimited;
}

FewestDomains PlacementContext::FewestOnEmptyCluster() const {
  if (restricted()) return WorkOutFewestOnEmptyCluster();  // the node list is part of the question
  EmptyClusterMemo& memo = IndexesOf(ledger_).empty_cluster_memo();
  const EmptyClusterMemo::Shape shape = EmptyClusterShape();
  if (std::optional<FewestDomains> known = memo.Find(shape).fewest) return *std::move(known);
  FewestDomains fewest = WorkOutFewestOnEmptyCluster();
  memo.KeepFewest(shape, fewest);
  return fewest;
}

FewestDomains PlacementContext::WorkOutFewestOnEmptyCluster() const {
  const double reserve = reserve_;
  auto gpus_under = [&](Milliwatts cap, Milliwatts idle) { return GpusFor(UsableCap(cap, reserve) - idle); };
  std::vector<DomainOffer> offers;
  offers.reserve(topology_.domain_rooms(type_).size());
  for (const Topology::DomainRoom& d : topology_.domain_rooms(type_)) {
    int offer = 0;
    if (restricted()) {
      for (NodeId n : topology_.domains()[d.domain].nodes)
        if (Allowed(n)) offer += NodeShare(topology_.nodes()[n].gpus);
    } else {  // no need to visit the nodes
      offer = NominalOffer(d);
    }
    if (offer > 0) offers.push_back({d.domain, offer});
  }
  FewestDomains fewest = FindFewestDomains(
      topology_, offers, gpus(),
      [&](RackId r) { return gpus_under(topology_.racks()[r].cap, topology_.racks()[r].idle); },
      [&](PowerDomainId p) { return gpus_under(topology_.power_domains()[p].cap, topology_.power_domains()[p].idle); });
  fewest.domains.clear();  // only the count and the reach are asked for (and kept)
  return fewest;
}

int PlacementContext::NodeCapacity(NodeId n) const {
  if (!Allowed(n)) return 0;
  return NodeShare(ledger_.free_gpu_count(n));
}

Milliwatts PlacementContext::RackRoom(RackId r) const { return ledger_.RackRoom(r, reserve_); }

Milliwatts PlacementContext::PowerDomainRoom(PowerDomainId p) const { return ledger_.PowerDomainRoom(p, reserve_); }

long long PlacementContext::GpusFor(Milliwatts room) const {
  if (per_gpu_ <= 0) return kUnlimited;
  return RoundDown(static_cast<int>(std::clamp<Milliwatts>(room / per_gpu_, 0, kUnlimited)));
}

int PlacementContext::PowerGpus(RackId r, const PowerScratch* scratch) const {
  Milliwatts room = RackRoom(r) - (scratch ? scratch->rack(r) : 0);
  for (PowerDomainId p : topology_.racks()[r].power_chain)
    room = std::min(room, PowerDomainRoom(p) - (scratch ? scratch->power_domain(p) : 0));
  if (room <= 0) return 0;
  if (per_gpu_ <= 0) return kUnlimited;  // a job that declares 0 W per GPU is never limited by power
  return static_cast<int>(std::min<Milliwatts>(room / per_gpu_, kUnlimited));
}

int PlacementContext::MostPowerGpus() const {
  // The same arithmetic as PowerGpus, on the largest headroom: both are monotone in the room.
  const Milliwatts room = IndexesOf(ledger_).MaxRackHeadroom();
  if (room <= 0) return 0;
  if (per_gpu_ <= 0) return kUnlimited;
  return static_cast<int>(std::min<Milliwatts>(room / per_gpu_, kUnlimited));
}

int PlacementContext::DomainCapacity(DomainId d) const {
  const NvlinkDomain& dom = topology_.domains()[d];
  int cap = 0;
  // The ledger counts a domain's free GPUs, and its nodes with k free, without visiting them; a share size
  // needs each node's free GPUs rounded down, so the nodes are visited.
  if (!restricted() && dom.nodes.size() > 1 && (k() > 0 || AnyCount())) {
    cap = k() > 0 ? k() * IndexesOf(ledger_).domain_nodes_with_free(d, k()) : ledger_.domain_free_gpus(d);
  } else {
    for (NodeId n : dom.nodes) cap += NodeCapacity(n);
  }
  if (cap == 0) return 0;
  return RoundDown(std::min(cap, PowerGpus(dom.rack, nullptr)));
}

}  // namespace rackwise::internal
