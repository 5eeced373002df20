// The guaranteed-slice rule under faults, against an independent recount. Three owners (two with shares, one
// without) on their own nodes of a small capped cluster (racks under rows under a hall) reserve and release
// through a central ledger that applies the rule; at random one goes dark (cut off from the ledger) and adds and
// ends work under its fallback caps alone, the central ledger still holding what it last knew; it comes back
// and reconciles its whole list; the central ledger restarts from what it holds. After every event the recount
// (node types' idle and per-GPU draw over what really runs, summed up each rack's power chain) must keep every
// rack and power domain at or under its usable cap.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "rackwise/guaranteed_slices.h"
#include "rackwise/start_guard.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

constexpr std::array<const char*, 3> kPrefixes = {"slurm/c1/", "k8s/", "other/x/"};

Topology Build(int reserve_pct) {
  SyntheticClusterSpec spec;
  // 4 racks of 4 H100 nodes: rack 30 kW (10 kW idle), rows of 2 racks at 50 kW, a hall of 90 kW.
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 4, 4, 30, 8, 2, 50});
  spec.hall_cap_kw = 90;
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(reserve_pct);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// What really runs, recounted from the description alone: no Ledger, no slices. Empty when every rack and power
// domain is at or under its usable cap, else the first one that is not.
std::string OverUsableCap(const Topology& t, const std::vector<std::map<std::string, Allocation>>& running) {
  std::vector<Milliwatts> rack(t.racks().size(), 0), pd(t.power_domains().size(), 0);
  const auto add = [&](RackId r, Milliwatts mw) {
    rack[r] += mw;
    for (PowerDomainId p : t.racks()[r].power_chain) pd[p] += mw;
  };
  for (const Node& n : t.nodes()) add(n.rack, t.node_types()[n.type].idle);
  for (const auto& owner : running) {
    for (const auto& [id, a] : owner) {
      for (const NodeGpus& ng : a.nodes) {
        const Node& n = t.nodes()[ng.node];
        add(n.rack, (a.per_gpu ? a.per_gpu : t.node_types()[n.type].per_gpu) * std::popcount(ng.gpus));
      }
    }
  }
  const double reserve = t.policy().power_reserve_fraction;
  for (size_t r = 0; r < rack.size(); ++r)
    if (rack[r] > UsableCap(t.racks()[r].cap, reserve)) return absl::StrCat("rack ", t.racks()[r].name);
  for (size_t p = 0; p < pd.size(); ++p)
    if (pd[p] > UsableCap(t.power_domains()[p].cap, reserve)) return absl::StrCat("domain ", t.power_domains()[p].name);
  return "";
}

// The central ledger (as rackwise-ledger keeps it) and three faces.
class World {
 public:
  World(const Topology& t, std::vector<OwnerShare> shares, uint64_t seed)
      : t_(t), slices_(*GuaranteedSlices::Create(t, std::move(shares))), rng_(seed) {
    central_ = std::make_unique<Ledger>(t);
    running_.resize(kPrefixes.size());
    dark_.resize(kPrefixes.size());
  }

  // One random event; returns what it was, for the failure message.
  std::string Step() {
    const int o = static_cast<int>(rng_() % kPrefixes.size());
    const int roll = static_cast<int>(rng_() % 100);
    if (roll < 50) return Add(o);
    if (roll < 80) return End(o);
    if (roll < 95) return dark_[o] ? Return(o) : GoDark(o);
    return Restart();
  }

  const std::vector<std::map<std::string, Allocation>>& running() const { return running_; }

 private:
  std::string Add(int o) {
    // Owner o's nodes are those with index % 3 == o, as two schedulers each own their own nodes.
    const int nodes = static_cast<int>(t_.nodes().size());
    NodeId node = static_cast<NodeId>((rng_() % (nodes / 3)) * 3 + o);
    GpuMask used = 0;
    for (const auto& [id, a] : running_[o])
      for (const NodeGpus& ng : a.nodes)
        if (ng.node == node) used |= ng.gpus;
    const GpuMask free = static_cast<GpuMask>(~used & 0xff);
    const GpuMask want = static_cast<GpuMask>(free & (rng_() & 0xff));
    if (want == 0) return "add: nothing free";
    Allocation a{absl::StrCat(kPrefixes[o], next_id_++), {{node, want}}, rng_() % 4 == 0 ? 600'000 : 0};
    absl::Status s;
    if (dark_[o]) {
      s = CommitWithinUsableCaps(*dark_[o], a);  // the face alone, on its fallback caps
    } else {
      s = CheckWithinUsableCaps(*central_, a);
      if (s.ok()) s = slices_.Admit(*central_, a);
      if (s.ok()) s = central_->Commit(a);
      if (s.ok()) slices_.Add(*central_, a);
    }
    if (s.ok()) running_[o][a.id] = a;
    return absl::StrCat("add ", a.id, dark_[o] ? " (dark)" : "", s.ok() ? "" : " refused");
  }

  std::string End(int o) {
    if (running_[o].empty()) return "end: nothing runs";
    auto it = std::next(running_[o].begin(), static_cast<long>(rng_() % running_[o].size()));
    const std::string id = it->first;
    if (dark_[o]) {
      dark_[o]->Release(id);  // the ledger cannot hear of it: it still counts it
    } else {
      slices_.Remove(*central_, *central_->Find(id));
      central_->Release(id);
    }
    running_[o].erase(it);
    return absl::StrCat("end ", id);
  }

  std::string GoDark(int o) {
    dark_[o] = std::make_unique<Ledger>(t_);
    const ShareCaps caps = slices_.FallbackCaps(slices_.ShareOfPrefix(kPrefixes[o]));
    for (RackId r = 0; r < static_cast<RackId>(caps.rack.size()); ++r) dark_[o]->SetRackCap(r, caps.rack[r]);
    for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(caps.power_domain.size()); ++p)
      dark_[o]->SetPowerDomainCap(p, caps.power_domain[p]);
    for (const auto& [id, a] : running_[o]) EXPECT_TRUE(dark_[o]->Commit(a, CommitMode::kRecover).ok());
    return absl::StrCat("dark ", kPrefixes[o]);
  }

  // Reconcile: the owner's list replaces what the central ledger held under its prefix, recorded even over caps.
  std::string Return(int o) {
    std::vector<std::string> held;
    for (const Allocation* a : central_->Allocations())
      if (a->id.starts_with(kPrefixes[o])) held.push_back(a->id);
    for (const std::string& id : held) {
      slices_.Remove(*central_, *central_->Find(id));
      central_->Release(id);
    }
    for (const auto& [id, a] : running_[o]) {
      EXPECT_TRUE(central_->Commit(a, CommitMode::kRecover).ok());
      slices_.Add(*central_, a);
    }
    dark_[o].reset();
    return absl::StrCat("return ", kPrefixes[o]);
  }

  std::string Restart() {
    auto fresh = std::make_unique<Ledger>(t_);
    for (const Allocation* a : central_->Allocations()) EXPECT_TRUE(fresh->Commit(*a, CommitMode::kRecover).ok());
    central_ = std::move(fresh);
    slices_.Rebuild(*central_);
    return "ledger restart";
  }

  const Topology& t_;
  GuaranteedSlices slices_;
  std::mt19937_64 rng_;
  std::unique_ptr<Ledger> central_;
  std::vector<std::map<std::string, Allocation>> running_;
  std::vector<std::unique_ptr<Ledger>> dark_;  // the ledger of a face cut off, else null
  int next_id_ = 0;
};

// Shares for seed i: full sharing, halves, a pure split among the three, and random ones summing to at most 1.
std::vector<OwnerShare> SharesFor(uint64_t seed, std::mt19937_64& rng) {
  switch (seed % 4) {
    case 0: return {{kPrefixes[0], 0}, {kPrefixes[1], 0}};
    case 1: return {{kPrefixes[0], 0.5}, {kPrefixes[1], 0.5}};
    case 2: return {{kPrefixes[0], 0.25}, {kPrefixes[1], 0.5}, {kPrefixes[2], 0.25}};
    default: {
      std::uniform_real_distribution<double> u(0, 1);
      const double a = u(rng), b = u(rng) * (1 - a);
      return {{kPrefixes[0], a}, {kPrefixes[1], b}};
    }
  }
}

TEST(GuaranteedSlicesPropertyTest, NoFaultEverPassesAUsableCap) {
  int refused_adds = 0, dark_adds = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed);
    const Topology t = Build(seed % 3 == 0 ? 10 : 0);
    World world(t, SharesFor(seed, rng), seed);
    for (int step = 0; step < 3000; ++step) {
      const std::string event = world.Step();
      refused_adds += event.ends_with("refused");
      dark_adds += event.find("(dark)") != std::string::npos && !event.ends_with("refused");
      const std::string over = OverUsableCap(t, world.running());
      ASSERT_EQ(over, "") << "seed " << seed << ", step " << step << " (" << event << ")";
    }
  }
  // The streams reach the caps and the fallback: otherwise the property says nothing.
  EXPECT_GT(refused_adds, 1000);
  EXPECT_GT(dark_adds, 1000);
}

}  // namespace
}  // namespace rackwise
