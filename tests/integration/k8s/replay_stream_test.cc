// A replayed stream of single pods and gang pods through filter -> prioritize -> bind over real HTTP, with
// pods finishing along the way. After every step: the ledger's invariants hold, no rack or power domain
// draws more than its cap, and every group that could fit in one NVLink domain when it was planned got one.
#include <random>
#include <set>

#include "extender_fixture.h"

namespace rackwise::k8s::testing {
namespace {

class ReplayStreamTest : public ExtenderHttpFixture {};

// Whether `pods` pods of `pod_gpus` GPUs fit inside one NVLink domain right now (trays free, rack power).
bool FitsInOneDomain(const Ledger& l, int pods, int pod_gpus) {
  const Topology& t = l.topology();
  for (DomainId d = 0; d < static_cast<DomainId>(t.domains().size()); ++d) {
    const NvlinkDomain& dom = t.domains()[d];
    int slots = 0;
    for (NodeId n : dom.nodes) slots += l.free_gpu_count(n) / pod_gpus;
    Milliwatts need = static_cast<Milliwatts>(pods) * pod_gpus * t.node_types()[dom.type].per_gpu;
    if (slots >= pods && l.RackHeadroom(dom.rack, t.policy().power_reserve_fraction) >= need) return true;
  }
  return false;
}

void CheckCaps(const Ledger& l) {
  ASSERT_TRUE(l.CheckInvariants().ok()) << l.CheckInvariants();
  for (RackId r = 0; r < static_cast<RackId>(l.topology().racks().size()); ++r) {
    ASSERT_LE(l.rack_draw(r), l.rack_cap(r)) << l.topology().racks()[r].name;
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(l.topology().power_domains().size()); ++p) {
    ASSERT_LE(l.power_domain_draw(p), l.power_domain_cap(p)) << l.topology().power_domains()[p].name;
  }
}

TEST_F(ReplayStreamTest, NeverOvercommitsAndKeepsGroupsInOneDomain) {
  StartExtender();
  std::mt19937 rng(42);
  const std::vector<std::string> nodes = AllNodes();
  std::vector<PodInfo> running;  // for finishing pods later
  int groups_checked = 0, groups_one_domain = 0, bound = 0, refused = 0;
  for (int step = 0; step < 160; ++step) {
    // Finish some pods now and then, as the API server's watch would report them.
    if (!running.empty() && rng() % 3 == 0) {
      size_t i = rng() % running.size();
      service_->DeletePod(running[i]);
      running.erase(running.begin() + static_cast<long>(i));
    }
    if (rng() % 4 == 0) {
      // A group of 4-GPU pods (NVL72 trays), 2..16 pods.
      int size = 2 + static_cast<int>(rng() % 15);
      std::string g = "g" + std::to_string(step);
      Json ann = {{"rackwise.io/group", g},
                  {"rackwise.io/group-size", std::to_string(size)},
                  {"rackwise.io/nvlink", "preferred"}};
      bool fits_one = service_->WithLedger([&](const Ledger& l) { return FitsInOneDomain(l, size, 4); });
      std::set<std::string> domains;
      int placed = 0;
      for (int i = 0; i < size; ++i) {
        Json pod = MakePod(g + "-" + std::to_string(i), 4, ann);
        std::string node = Schedule(pod, nodes);
        if (node.empty()) break;
        ++placed;
        domains.insert(service_->topology()
                           .domains()[service_->topology().nodes()[*service_->topology().FindNode(node)].domain]
                           .name);
        PodInfo info = *ParsePod(pod);
        info.node_name = node;
        running.push_back(info);
        service_->WithLedger([](const Ledger& l) {
          CheckCaps(l);
          return 0;
        });
      }
      if (placed == size) {
        ++groups_checked;
        if (fits_one) {
          EXPECT_EQ(domains.size(), 1u) << "group " << g << " of " << size << " pods fitted one domain";
          ++groups_one_domain;
        }
      }
    } else {
      static const int kSizes[] = {1, 2, 4, 8};
      int gpus = kSizes[rng() % 4];
      Json pod = MakePod("s" + std::to_string(step), gpus, {{"rackwise.io/gpu-watts", rng() % 2 ? "600" : "700"}});
      std::string node = Schedule(pod, nodes);
      if (node.empty()) {
        ++refused;
      } else {
        ++bound;
        PodInfo info = *ParsePod(pod);
        info.node_name = node;
        running.push_back(info);
      }
    }
    service_->WithLedger([](const Ledger& l) {
      CheckCaps(l);
      return 0;
    });
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(bound, 20);
  EXPECT_GT(groups_checked, 5);
  EXPECT_GT(groups_one_domain, 3);
  // Let every reservation expire, finish everything: the ledger must come back to empty.
  now_ms_ += 10'000'000;
  for (const PodInfo& p : running) service_->DeletePod(p);
  Post("/filter", FilterBody(MakePod("final", 1), nodes));
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
  RecordProperty("refused", refused);
}

}  // namespace
}  // namespace rackwise::k8s::testing
