// The fewest NVLink domains under nested caps: the case that used to wait for ever, and a property test of the
// placer against an exhaustive search over every set of domains on small random capped clusters.
#include "fewest_domains.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

PlacementRequest Req(int gpus, int per_node, Locality loc, std::optional<NodeTypeId> type = std::nullopt) {
  PlacementRequest r;
  r.id = "job";
  r.gpus = gpus;
  r.gpus_per_node = per_node;
  r.locality = loc;
  r.node_type = type;
  return r;
}

// Four HGX H100 racks of four nodes in one row: h01 and h04 capped at 44 kW, h02 at 30 kW, h03 at 36 kW, the
// row at 130 kW, 5% reserve. At 962.5 W per GPU the racks power 33, 19, 25 and 33 GPUs, the row 86.
Topology FourCappedHgxRacks() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 4, 4, 44, 8, 4, 130});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_racks(1)->set_power_cap_kw(30);
  d.mutable_racks(2)->set_power_cap_kw(36);
  d.mutable_policy()->set_power_reserve_pct(5);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(FewestDomainsTest, RequiredJobsThatFitUnderNestedCapsArePlacedInTheFewestDomains) {
  const Topology t = FourCappedHgxRacks();
  const Ledger l(t);
  // All of h01 and three nodes of h04 (or of h03): 7 nodes for 56 GPUs; 80 and 86 need every watt of the row.
  for (auto [gpus, fewest] : std::vector<std::pair<int, int>>{{56, 7}, {60, 8}, {64, 8}, {80, 10}, {86, 11}}) {
    auto out = Placer::Place(l, Req(gpus, 0, Locality::kRequired, 0));
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(std::holds_alternative<PlacementDecision>(*out))
        << gpus << " GPUs: " << std::get<PlacementRefusal>(*out).Message();
    EXPECT_EQ(std::get<PlacementDecision>(*out).domains, fewest) << gpus << " GPUs";
    EXPECT_EQ(std::get<PlacementDecision>(*out).min_domains, fewest) << gpus << " GPUs";
  }
  auto preferred = Placer::Place(l, Req(64, 0, Locality::kPreferred, 0));
  ASSERT_TRUE(preferred.ok() && std::holds_alternative<PlacementDecision>(*preferred));
  EXPECT_EQ(std::get<PlacementDecision>(*preferred).domains, 8);
}

TEST(FewestDomainsTest, AJobTheCapsCanNeverPowerIsUnresolvable) {
  const Topology t = FourCappedHgxRacks();
  const Ledger l(t);
  // 87 GPUs are more than the row powers; 88 at 8 per node too (the row powers 86, so 80 in whole nodes).
  for (auto [gpus, per_node] : std::vector<std::pair<int, int>>{{87, 0}, {88, 8}}) {
    auto out = Placer::Place(l, Req(gpus, per_node, Locality::kPreferred, 0));
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(std::holds_alternative<PlacementRefusal>(*out)) << gpus;
    EXPECT_TRUE(std::get<PlacementRefusal>(*out).unresolvable) << gpus << " GPUs";
  }
}

TEST(FewestDomainsTest, RequiredWaitsForTheNodeTypeWithTheFewestDomains) {
  // One NVL72 rack (72 GPUs in one NVLink domain) and two racks of four HGX nodes (8 GPUs per domain).
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18, 0, 8, 0, 0});
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 0, 8, 0, 0});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok()) << t.status();
  Ledger l(*t);
  // Empty: a 64-GPU required job goes to the NVL72 rack, one domain.
  auto first = Placer::Place(l, Req(64, 0, Locality::kRequired));
  ASSERT_TRUE(first.ok() && std::holds_alternative<PlacementDecision>(*first));
  EXPECT_EQ(std::get<PlacementDecision>(*first).domains, 1);
  // With 12 of the rack's GPUs in use it waits, rather than start on 8 HGX nodes, and says which type it waits for.
  Allocation busy{"busy", {}, 0};
  for (int i = 0; i < 3; ++i) busy.nodes.push_back({t->racks()[0].nodes[i], 0xf});
  ASSERT_TRUE(l.Commit(busy).ok());
  auto waits = Placer::Place(l, Req(64, 0, Locality::kRequired));
  ASSERT_TRUE(waits.ok() && std::holds_alternative<PlacementRefusal>(*waits));
  const PlacementRefusal& no = std::get<PlacementRefusal>(*waits);
  EXPECT_FALSE(no.unresolvable);
  EXPECT_NE(no.detail.find("is 1, on gb200-tray"), std::string::npos) << no.detail;
  EXPECT_NE(no.detail.find("hgx-h100 would need 8"), std::string::npos) << no.detail;
  // Asking for HGX is the job's own choice: 8 domains is then its minimum.
  auto hgx = Placer::Place(l, Req(64, 0, Locality::kRequired, 1));
  ASSERT_TRUE(hgx.ok() && std::holds_alternative<PlacementDecision>(*hgx));
  EXPECT_EQ(std::get<PlacementDecision>(*hgx).domains, 8);
  // Preferred takes the best it can get now, and records the cross-type minimum it missed.
  auto spread = Placer::Place(l, Req(64, 0, Locality::kPreferred));
  ASSERT_TRUE(spread.ok() && std::holds_alternative<PlacementDecision>(*spread));
  EXPECT_EQ(std::get<PlacementDecision>(*spread).domains, 8);
  EXPECT_EQ(std::get<PlacementDecision>(*spread).min_domains, 1);
  absl::StatusOr<Placer::Fewest> fewest = Placer::FewestDomains(l, Req(64, 0, Locality::kRequired));
  ASSERT_TRUE(fewest.ok());
  EXPECT_EQ(fewest->domains, 1);
  EXPECT_EQ(fewest->type, 0);
}

// ---- The exhaustive search: every set of domains of one node type, the most GPUs the caps let it give. ----

struct Search {
  const Ledger& l;
  const PlacementRequest& r;
  NodeTypeId type;
  bool empty;  // the cluster as described, empty and healthy; else the ledger now

  bool Allowed(NodeId n) const {
    if (!r.allowed_nodes.empty() &&
        std::find(r.allowed_nodes.begin(), r.allowed_nodes.end(), n) == r.allowed_nodes.end())
      return false;
    return std::find(r.excluded_nodes.begin(), r.excluded_nodes.end(), n) == r.excluded_nodes.end();
  }
  int Offer(DomainId d) const {
    int gpus = 0;
    for (NodeId n : l.topology().domains()[d].nodes) {
      if (!Allowed(n) || (!empty && l.node_health(n) != NodeHealth::kUp)) continue;
      const int free = empty ? l.topology().nodes()[n].gpus : std::popcount(l.free_gpus(n));
      const int share = ShareGranule(r);  // k, or the share size: a node gives its free GPUs in whole shares
      gpus += r.gpus_per_node > 0 ? (free >= r.gpus_per_node ? r.gpus_per_node : 0) : free / share * share;
    }
    return gpus;
  }
  long long Powered(Milliwatts cap, Milliwatts used) const {
    const Topology& t = l.topology();
    const Milliwatts per_gpu = r.watts_per_gpu > 0 ? WattsToMilliwatts(r.watts_per_gpu) : t.node_types()[type].per_gpu;
    const Milliwatts room = UsableCap(cap, t.policy().power_reserve_fraction) - used;
    if (per_gpu <= 0) return 1LL << 40;
    const long long g = std::max<Milliwatts>(0, room) / per_gpu;
    const int granule = ShareGranule(r);
    return g / granule * granule;
  }
  // The most GPUs the domains in `set` can give together: each rack passes at most what its room powers, each
  // power domain at most what its room powers of what its racks and child domains pass.
  long long Give(const std::vector<DomainId>& set) const {
    const Topology& t = l.topology();
    std::vector<long long> rack(t.racks().size(), 0), pd(t.power_domains().size(), 0);
    for (DomainId d : set) rack[t.domains()[d].rack] += Offer(d);
    long long total = 0;
    for (RackId k = 0; k < static_cast<RackId>(rack.size()); ++k) {
      const long long g = std::min(
          rack[k], Powered(empty ? t.racks()[k].cap : l.rack_cap(k), empty ? t.racks()[k].idle : l.rack_draw(k)));
      (t.racks()[k].power_domain == kNoId ? total : pd[t.racks()[k].power_domain]) += g;
    }
    // A power domain is finished once every deeper one is: go by depth.
    std::vector<int> depth(pd.size(), 0);
    int deepest = 0;
    for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(pd.size()); ++p) {
      for (PowerDomainId q = t.power_domains()[p].parent; q != kNoId; q = t.power_domains()[q].parent) ++depth[p];
      deepest = std::max(deepest, depth[p]);
    }
    for (int level = deepest; level >= 0; --level) {
      for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(pd.size()); ++p) {
        if (depth[p] != level) continue;
        const long long g = std::min(pd[p], Powered(empty ? t.power_domains()[p].cap : l.power_domain_cap(p),
                                                    empty ? t.power_domains()[p].idle : l.power_domain_draw(p)));
        const PowerDomainId up = t.power_domains()[p].parent;
        (up == kNoId ? total : pd[up]) += g;
      }
    }
    return total;
  }
  std::vector<DomainId> Domains() const {
    std::vector<DomainId> doms;
    for (DomainId d = 0; d < static_cast<DomainId>(l.topology().domains().size()); ++d)
      if (l.topology().domains()[d].type == type) doms.push_back(d);
    return doms;
  }
  // The fewest domains that give the job, or 0 if no set does.
  int Fewest() const {
    const std::vector<DomainId> doms = Domains();
    int best = 0;
    for (uint32_t mask = 1; mask < (1u << doms.size()); ++mask) {
      const int n = std::popcount(mask);
      if (best > 0 && n >= best) continue;
      std::vector<DomainId> set;
      for (size_t i = 0; i < doms.size(); ++i)
        if (mask >> i & 1) set.push_back(doms[i]);
      if (Give(set) >= r.gpus) best = n;
    }
    return best;
  }
};

// `mixed`: two blocks of different systems (so two node types, one of them NVL72 half the time).
v1::ClusterDescription SmallCappedCluster(std::mt19937_64& rng, bool mixed = false) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  const int blocks = mixed ? 2 : pick(1, 2);
  const int first = pick(0, 2), second = (first + pick(1, 2)) % 3;
  double hall_idle = 0, hall_full = 0;
  for (int b = 0; b < blocks; ++b) {
    RackBlock block;
    block.system = static_cast<ReferenceSystem>(mixed ? (b == 0 ? first : second) : pick(0, 2));
    const bool nvl = block.system == ReferenceSystem::kGb200Nvl72;
    block.racks = nvl ? pick(1, 5) : pick(1, 3);
    block.nodes_per_rack = nvl ? pick(3, 18) : pick(1, 3);
    const v1::NodeType type = ReferenceNodeType(block.system);
    const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
    const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
    block.rack_cap_kw = pick(0, 3) ? real(idle_kw + 0.3 * (full_kw - idle_kw), full_kw) : 0;
    block.racks_per_su = pick(1, 3);
    const double rack_cap = block.rack_cap_kw > 0 ? block.rack_cap_kw : full_kw;
    if (pick(0, 2)) {
      block.racks_per_row = pick(1, 3);
      block.row_cap_kw = block.racks_per_row * real(idle_kw + 0.4 * (rack_cap - idle_kw), rack_cap);
    }
    hall_idle += block.racks * idle_kw;
    hall_full += block.racks * rack_cap;
    spec.blocks.push_back(block);
  }
  if (pick(0, 2) == 0) spec.hall_cap_kw = real(hall_idle + 0.5 * (hall_full - hall_idle), hall_full);
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  if (pick(0, 1)) d.mutable_policy()->set_power_reserve_pct(pick(1, 10));
  return d;
}

// Jobs already running on up to 70% of the GPUs (anywhere, fragments first or not), a node down now and then.
void FillPartly(std::mt19937_64& rng, Ledger* l) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int target = l->topology().total_gpus() * pick(0, 70) / 100;
  for (int j = 0, used = 0; used < target && j < 64; ++j) {
    PlacementRequest r = Req(pick(1, 12), 0, pick(0, 1) ? Locality::kNone : Locality::kPreferred);
    r.id = "running" + std::to_string(j);
    auto out = Placer::Place(*l, r);
    if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) continue;
    ASSERT_TRUE(l->Commit(std::get<PlacementDecision>(*out).ToAllocation(r.id)).ok());
    used += r.gpus;
  }
  if (pick(0, 4) == 0) l->SetNodeHealth(pick(0, static_cast<int>(l->topology().nodes().size()) - 1), NodeHealth::kDown);
}

TEST(FewestDomainsPropertyTest, PlacerMatchesAnExhaustiveSearchOnSmallCappedClusters) {
  std::mt19937_64 rng(13);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int placed_multi = 0, waited = 0, never = 0, shared = 0;
  for (int round = 0; round < 600; ++round) {
    auto t = Topology::Build(SmallCappedCluster(rng));
    ASSERT_TRUE(t.ok()) << t.status();
    Ledger l(*t);
    FillPartly(rng, &l);
    for (int q = 0; q < 8; ++q) {
      const NodeTypeId type = t->nodes()[pick(0, static_cast<int>(t->nodes().size()) - 1)].type;
      if (Search{l, PlacementRequest{}, type, true}.Domains().size() > 14) continue;  // keep 2^D small
      int type_gpus = 0, type_nodes = 0;
      for (const Node& n : t->nodes()) {
        type_gpus += n.type == type ? n.gpus : 0;
        type_nodes += n.type == type;
      }
      const int per_node = std::vector<int>{0, 0, 0, 2, 4, 8}[pick(0, 5)];
      // Any split, half the time in whole shares (pods of 2, 3 or 4 GPUs).
      const int share = per_node == 0 && pick(0, 1) ? pick(2, 4) : 0;
      // Mostly sizes the type could hold, some beyond.
      const int gpus = per_node > 0 ? per_node * pick(1, type_nodes)
                       : share > 0  ? share * pick(1, std::max(1, type_gpus * 3 / 4 / share))
                                    : pick(2, std::max(2, type_gpus * 3 / 4));
      PlacementRequest r = Req(gpus, per_node, pick(0, 1) ? Locality::kRequired : Locality::kPreferred, type);
      r.share_gpus = share;
      if (pick(0, 3) == 0) r.watts_per_gpu = pick(300, 1400);
      if (pick(0, 5) == 0)
        for (NodeId n = 0; n < static_cast<NodeId>(t->nodes().size()); ++n)
          if (pick(0, 3)) r.allowed_nodes.push_back(n);
      const int now = Search{l, r, type, false}.Fewest(), ever = Search{l, r, type, true}.Fewest();
      auto out = Placer::Place(l, r);
      ASSERT_TRUE(out.ok()) << out.status();
      const std::string what = "round " + std::to_string(round) + " job " + std::to_string(q) + ": " +
                               std::to_string(gpus) + " GPUs, " + std::to_string(per_node) + " per node, shares of " +
                               std::to_string(share);
      if (auto* d = std::get_if<PlacementDecision>(&*out)) {
        ASSERT_GT(now, 0) << what << ": placed where the exhaustive search finds nothing";
        for (const NodeGpus& ng : d->nodes) {
          EXPECT_EQ(std::popcount(ng.gpus) % ShareGranule(r), 0)
              << what << ": node " << ng.node << " takes " << std::popcount(ng.gpus) << " GPUs";
          EXPECT_EQ(ng.gpus & ~l.free_gpus(ng.node), 0u) << what << ": node " << ng.node << " given busy GPUs";
        }
        shared += share > 0;
        EXPECT_LE(d->domains, now) << what;
        if (*r.locality == Locality::kRequired) {
          EXPECT_EQ(d->domains, ever) << what;
        }
        EXPECT_EQ(d->min_domains, std::min(ever, d->domains)) << what;
        placed_multi += d->domains > 1;
      } else {
        const PlacementRefusal& no = std::get<PlacementRefusal>(*out);
        EXPECT_EQ(no.unresolvable, ever == 0) << what << ": " << no.Message();
        if (*r.locality == Locality::kRequired) {
          EXPECT_TRUE(now == 0 || now > ever) << what << ": refused although " << now << " domains hold it now";
        } else {
          EXPECT_EQ(now, 0) << what << ": refused although " << now << " domains hold it now";
        }
        waited += now > 0;
        never += ever == 0;
      }
    }
  }
  // The random clusters did exercise each outcome.
  EXPECT_GT(placed_multi, 100);
  EXPECT_GT(waited, 10);
  EXPECT_GT(never, 10);
  EXPECT_GT(shared, 100);
}

// The ledger keeps the empty-cluster figures per request shape (empty_cluster_memo.h): a ledger that has answered
// many shapes gives, for every shape, what a fresh ledger works out, so no two shapes share an entry.
TEST(FewestDomainsPropertyTest, EmptyClusterFiguresAreKeptPerShape) {
  std::mt19937_64 rng(17);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int never = 0, several = 0;
  for (int round = 0; round < 40; ++round) {
    auto t = Topology::Build(SmallCappedCluster(rng, /*mixed=*/pick(0, 1) == 1));
    ASSERT_TRUE(t.ok()) << t.status();
    Ledger warm(*t);
    for (int q = 0; q < 60; ++q) {
      const int per_node = std::vector<int>{0, 0, 1, 2, 4}[pick(0, 4)];
      const int share = per_node == 0 && pick(0, 1) ? pick(2, 4) : 0;
      const int unit = std::max({per_node, share, 1});
      PlacementRequest r = Req(unit * pick(1, std::max(1, t->total_gpus() / unit)), per_node,
                               pick(0, 1) ? Locality::kRequired : Locality::kPreferred);
      r.share_gpus = share;
      if (pick(0, 2) == 0) r.watts_per_gpu = pick(300, 1400);
      if (pick(0, 2) == 0) r.node_type = pick(0, static_cast<int>(t->node_types().size()) - 1);
      const std::string what = "round " + std::to_string(round) + " shape " + std::to_string(q);
      Ledger fresh(*t);
      auto kept = Placer::FewestDomains(warm, r), worked_out = Placer::FewestDomains(fresh, r);
      ASSERT_EQ(kept.ok(), worked_out.ok()) << what;
      if (!kept.ok()) continue;
      EXPECT_EQ(kept->domains, worked_out->domains) << what;
      EXPECT_EQ(kept->type, worked_out->type) << what;
      auto a = Placer::Place(warm, r), b = Placer::Place(fresh, r);
      ASSERT_TRUE(a.ok() && b.ok()) << what;
      ASSERT_EQ(a->index(), b->index()) << what;
      if (const auto* no = std::get_if<PlacementRefusal>(&*a)) {
        EXPECT_EQ(no->Message(), std::get<PlacementRefusal>(*b).Message()) << what;
        never += no->unresolvable;
      } else {
        EXPECT_EQ(std::get<PlacementDecision>(*a).nodes, std::get<PlacementDecision>(*b).nodes) << what;
        several += std::get<PlacementDecision>(*a).domains > 1;
      }
    }
  }
  EXPECT_GT(never, 50);
  EXPECT_GT(several, 50);
}

// `required` across node types: never more domains than the best type could give on the empty cluster under
// the caps, and a refusal only when no type can give that many now.
TEST(FewestDomainsPropertyTest, RequiredTakesTheFewestOverEveryNodeType) {
  std::mt19937_64 rng(1313);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int placed = 0, waited = 0, skipped_a_type = 0;
  for (int round = 0; round < 300; ++round) {
    auto t = Topology::Build(SmallCappedCluster(rng, /*mixed=*/true));
    ASSERT_TRUE(t.ok()) << t.status();
    Ledger l(*t);
    FillPartly(rng, &l);
    bool small = true;
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t->node_types().size()); ++type)
      small = small && Search{l, PlacementRequest{}, type, true}.Domains().size() <= 12;
    if (!small) continue;
    for (int q = 0; q < 6; ++q) {
      const int per_node = std::vector<int>{0, 0, 0, 4}[pick(0, 3)];
      const int gpus = per_node > 0 ? per_node * pick(1, 20) : pick(2, std::max(2, t->total_gpus() / 2));
      PlacementRequest r = Req(gpus, per_node, Locality::kRequired);
      int ever = 0, now_at_ever = 0, types_with_more = 0;
      for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t->node_types().size()); ++type) {
        const int e = Search{l, r, type, true}.Fewest();
        if (e > 0 && (ever == 0 || e < ever)) ever = e;
      }
      for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t->node_types().size()); ++type) {
        const int e = Search{l, r, type, true}.Fewest(), now = Search{l, r, type, false}.Fewest();
        if (ever > 0 && now > 0 && now <= ever) now_at_ever = 1;
        if (e > ever && now > 0) ++types_with_more;  // this type could hold it now, in more domains
      }
      auto out = Placer::Place(l, r);
      ASSERT_TRUE(out.ok()) << out.status();
      const std::string what = "round " + std::to_string(round) + ": " + std::to_string(gpus) + " GPUs, " +
                               std::to_string(per_node) + " per node";
      if (auto* d = std::get_if<PlacementDecision>(&*out)) {
        EXPECT_EQ(d->domains, ever) << what;
        EXPECT_EQ(d->min_domains, ever) << what;
        ++placed;
      } else {
        const PlacementRefusal& no = std::get<PlacementRefusal>(*out);
        EXPECT_EQ(now_at_ever, 0) << what << ": refused although a type gives " << ever << " domains now";
        EXPECT_EQ(no.unresolvable, ever == 0) << what << ": " << no.Message();
        waited += ever > 0;
        skipped_a_type += ever > 0 && types_with_more > 0;
      }
    }
  }
  EXPECT_GT(placed, 100);
  EXPECT_GT(waited, 20);
  EXPECT_GT(skipped_a_type, 5) << "no required job waited while a type with more domains had room: blind";
}

}  // namespace
}  // namespace rackwise
