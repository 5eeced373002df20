// The placer's indexes: construction, the NVLink domain buckets, the tallies and the check of everything. See
// placement_indexes.h; the headroom index has its own file, the power groups and the power order their own class
// (power_group_index.h).
#include "placement_indexes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "empty_cluster_memo.h"

namespace rackwise::internal {

PlacementIndexes::PlacementIndexes(const Ledger& ledger)
    : topology_(&ledger.topology()), empty_cluster_memo_(std::make_shared<EmptyClusterMemo>()) {
  const Topology& topology = *topology_;
  buckets_.resize(topology.node_types().size());
  for (const NvlinkDomain& d : topology.domains()) {
    auto& b = buckets_[d.type];
    if (static_cast<int>(b.size()) <= d.gpus) b.resize(d.gpus + 1);
  }
  const size_t nd = topology.domains().size();
  domain_hist_.resize(nd);
  bucket_pos_.assign(nd, 0);
  for (DomainId d = 0; d < static_cast<DomainId>(nd); ++d) {
    const NvlinkDomain& dom = topology.domains()[d];
    domain_hist_[d].assign(topology.node_types()[dom.type].gpus + 1, 0);
    for (NodeId node : dom.nodes) domain_hist_[d][ledger.free_gpu_count(node)]++;
    auto& bucket = buckets_[dom.type][ledger.domain_free_gpus(d)];
    bucket_pos_[d] = static_cast<int>(bucket.size());
    bucket.push_back(d);
  }
  LayOutTallies(ledger);
  for (RackId r = 0; r < static_cast<RackId>(topology.racks().size()); ++r)
    if (topology.racks()[r].power_domain == kNoId) kept_.root_racks.push_back(r);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(topology.power_domains().size()); ++p)
    if (topology.power_domains()[p].parent == kNoId) root_pds_.push_back(p);
  power_groups_ = PowerGroupIndex(topology, kept_, ledger.generation());
  RebuildHeadroom(ledger);
}

void PlacementIndexes::LayOutTallies(const Ledger& ledger) {
  const Topology& topology = *topology_;
  kept_.rack_tallies.resize(topology.racks().size());
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(topology.node_types().size()); ++type)
    type_tallies_.push_back({type, 0, 0, 0, std::vector<int>(topology.node_types()[type].gpus + 1, 0), 0});
  for (RackId r = 0; r < static_cast<RackId>(kept_.rack_tallies.size()); ++r) {
    for (NodeId node : topology.racks()[r].nodes) {
      const NodeTypeId type = topology.nodes()[node].type;
      auto& tallies = kept_.rack_tallies[r];
      auto it = std::find_if(tallies.begin(), tallies.end(), [type](const RackTypeTally& x) { return x.type == type; });
      if (it == tallies.end()) {
        tallies.push_back({type, 0, 0, 0, std::vector<int>(topology.node_types()[type].gpus + 1, 0), 0});
        it = tallies.end() - 1;
      }
      it->nodes++;
      type_tallies_[type].nodes++;
      Tally(node, {ledger.node_health(node), ledger.free_gpu_count(node)}, +1);
    }
  }
}

void PlacementIndexes::NodeMoved(NodeId node, NodeCount before, NodeCount after, int domain_free) {
  Tally(node, before, -1);
  if (after.free != before.free) {
    const DomainId d = topology_->nodes()[node].domain;
    domain_hist_[d][before.free]--;
    domain_hist_[d][after.free]++;
    MoveDomain(d, domain_free - (after.free - before.free), domain_free);
  }
  Tally(node, after, +1);
}

// Swap-remove from the old bucket, append to the new one.
void PlacementIndexes::MoveDomain(DomainId domain, int free_before, int free_now) {
  const NodeTypeId type = topology_->domains()[domain].type;
  auto& old_bucket = buckets_[type][free_before];
  const int pos = bucket_pos_[domain];
  old_bucket[pos] = old_bucket.back();
  bucket_pos_[old_bucket[pos]] = pos;
  old_bucket.pop_back();
  auto& new_bucket = buckets_[type][free_now];
  bucket_pos_[domain] = static_cast<int>(new_bucket.size());
  new_bucket.push_back(domain);
}

void PlacementIndexes::Tally(NodeId node, NodeCount count, int sign) {
  const Node& n = topology_->nodes()[node];
  auto add = [&](RackTypeTally& tally) {
    switch (count.health) {
      case NodeHealth::kDown: tally.down += sign; break;
      case NodeHealth::kDrained: tally.drained += sign; break;
      case NodeHealth::kUp:
        tally.up_by_free[count.free] += sign;
        tally.up_free_gpus += sign * count.free;
        break;
    }
  };
  add(type_tallies_[n.type]);
  for (RackTypeTally& tally : kept_.rack_tallies[n.rack]) {
    if (tally.type != n.type) continue;
    add(tally);
    return;
  }
}

int PlacementIndexes::domain_nodes_with_free(DomainId domain, int k) const {
  const auto& hist = domain_hist_[domain];
  int n = 0;
  for (int f = std::max(k, 0); f < static_cast<int>(hist.size()); ++f) n += hist[f];
  return n;
}

const std::vector<DomainId>& PlacementIndexes::DomainsWithFree(NodeTypeId type, int free) const {
  static const std::vector<DomainId> kEmpty;
  const auto& b = buckets_[type];
  if (free < 0 || free >= static_cast<int>(b.size())) return kEmpty;
  return b[free];
}

absl::Status PlacementIndexes::Check(const Ledger& ledger) const {
  if (absl::Status s = CheckDomains(ledger); !s.ok()) return s;
  if (absl::Status s = CheckTallies(ledger); !s.ok()) return s;
  if (absl::Status s = CheckHeadroom(ledger); !s.ok()) return s;
  if (absl::Status s = CheckTypeTallies(); !s.ok()) return s;
  return power_groups_.Check(kept_);
}

absl::Status PlacementIndexes::CheckDomains(const Ledger& ledger) const {
  const Topology& t = *topology_;
  for (DomainId d = 0; d < static_cast<DomainId>(t.domains().size()); ++d) {
    int free = 0;
    std::vector<int> hist(domain_hist_[d].size(), 0);
    for (NodeId n : t.domains()[d].nodes) {
      free += ledger.free_gpu_count(n);
      hist[ledger.free_gpu_count(n)]++;
    }
    if (free != ledger.domain_free_gpus(d) || hist != domain_hist_[d])
      return absl::InternalError(absl::StrCat("domain ", t.domains()[d].name, " index stale"));
    const auto& b = buckets_[t.domains()[d].type][free];
    if (bucket_pos_[d] >= static_cast<int>(b.size()) || b[bucket_pos_[d]] != d)
      return absl::InternalError(absl::StrCat("domain ", t.domains()[d].name, " not in its bucket"));
  }
  return absl::OkStatus();
}

absl::Status PlacementIndexes::CheckTallies(const Ledger& ledger) const {
  const Topology& t = *topology_;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    for (const RackTypeTally& tally : kept_.rack_tallies[r]) {
      RackTypeTally fresh{tally.type, 0, 0, 0, std::vector<int>(tally.up_by_free.size(), 0), 0};
      for (NodeId n : t.racks()[r].nodes) {
        if (t.nodes()[n].type != tally.type) continue;
        fresh.nodes++;
        if (ledger.node_health(n) == NodeHealth::kDown) {
          fresh.down++;
        } else if (ledger.node_health(n) == NodeHealth::kDrained) {
          fresh.drained++;
        } else {
          fresh.up_by_free[ledger.free_gpu_count(n)]++;
          fresh.up_free_gpus += ledger.free_gpu_count(n);
        }
      }
      if (fresh.nodes != tally.nodes || fresh.down != tally.down || fresh.drained != tally.drained ||
          fresh.up_by_free != tally.up_by_free || fresh.up_free_gpus != tally.up_free_gpus)
        return absl::InternalError(absl::StrCat("rack ", t.racks()[r].name, " tally stale"));
    }
  }
  return absl::OkStatus();
}

absl::Status PlacementIndexes::CheckTypeTallies() const {
  const Topology& t = *topology_;
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
    RackTypeTally sum{type, 0, 0, 0, std::vector<int>(t.node_types()[type].gpus + 1, 0), 0};
    for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
      for (const RackTypeTally& tally : kept_.rack_tallies[r]) {
        if (tally.type != type) continue;
        sum.nodes += tally.nodes;
        sum.down += tally.down;
        sum.drained += tally.drained;
        sum.up_free_gpus += tally.up_free_gpus;
        for (size_t f = 0; f < sum.up_by_free.size(); ++f) sum.up_by_free[f] += tally.up_by_free[f];
      }
    }
    const RackTypeTally& kept = type_tallies_[type];
    if (sum.nodes != kept.nodes || sum.down != kept.down || sum.drained != kept.drained ||
        sum.up_free_gpus != kept.up_free_gpus || sum.up_by_free != kept.up_by_free)
      return absl::InternalError(absl::StrCat("node type ", t.node_types()[type].name, " tally stale"));
  }
  return absl::OkStatus();
}

}  // namespace rackwise::internal
