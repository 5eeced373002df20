// The guaranteed slices and the faces' link against the real daemon: etcd and rackwise-ledger replicas on
// loopback (testdata/two_racks_shared.yaml: per rack a 16 kW budget of 1 kW GPUs, Slurm's slice 4 GPUs,
// Kubernetes's 8). The daemon enforces the slices of its --cluster description; a face's link falls back within
// its slice when the ledger is killed, and reconciles when a replica serves again: nothing lost, nothing doubled.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "etcd_test_fixture.h"
#include "in_process_ledger.h"
#include "ledger_link.h"
#include "rackwise/cluster_state.h"
#include "test_support.h"

namespace rackwise::ledger {
namespace {

using std::chrono::milliseconds;
using testing::MakeAllocation;
using testing::SharedRacks;
using testing::WaitFor;
using testing::WholeNode;

class EtcdFacesTest : public testing::LedgerEtcdTest {};

TEST_F(EtcdFacesTest, TheDaemonKeepsEveryOwnersUnusedSlice) {
  testing::Replica* a = StartReplica("a", SharedRacks());
  ASSERT_EQ(WaitForLeader({a}), a);
  EXPECT_NE(a->process->Log().find("owner prefix k8s/: guaranteed slice 0.5"), std::string::npos);
  LedgerClient client = ClientOf({a});
  ASSERT_TRUE(client.Reserve(WholeNode("k8s/ns/a", "n1")).ok());
  ASSERT_TRUE(client.Reserve(MakeAllocation("k8s/ns/b", "n2", {0, 1, 2, 3})).ok());
  absl::Status refused = client.Reserve(MakeAllocation("k8s/ns/c", "n2", {4}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("kept free for their guaranteed slices"), std::string::npos) << refused;
  EXPECT_TRUE(client.Reserve(MakeAllocation("slurm/c1/1", "n3", {0, 1, 2, 3})).ok());
  EXPECT_EQ(StoredKeys(), 3u);
}

TEST_F(EtcdFacesTest, AKilledLedgerMeansTheSliceAndItsReturnAReconcile) {
  const std::string listen = absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort());
  testing::Replica* a = StartReplica("a", SharedRacks(), {}, listen);
  ASSERT_EQ(WaitForLeader({a}), a);
  v1::ClusterDescription description = testing::LoadDescription(SharedRacks());
  description.mutable_ledger()->set_url(a->address);
  absl::StatusOr<Topology> topology = Topology::Build(description);
  ASSERT_TRUE(topology.ok());
  Ledger local(*topology);
  auto link = LedgerLink::Create(*topology, description, "k8s/");
  ASSERT_TRUE(link.ok()) << link.status();
  LedgerClient slurm = ClientOf({a});
  ASSERT_TRUE(slurm.Reserve(MakeAllocation("slurm/c1/1", "n5", {0, 1, 2, 3})).ok());
  ASSERT_TRUE((*link)->Sync(local, {}, false).ok()) << (*link)->last_error();
  const auto pod = [&](const std::string& name, const std::string& node, std::initializer_list<uint32_t> gpus) {
    return *AllocationFromProto(*topology, MakeAllocation("pod/ns/" + name, node, gpus));
  };
  ASSERT_TRUE((*link)->ReserveAndCommit(local, "k8s/ns/uid-a", pod("a", "n1", {0, 1, 2, 3, 4, 5, 6, 7})).ok());

  a->process->Signal(SIGKILL);
  EXPECT_FALSE((*link)->ReserveAndCommit(local, "k8s/ns/uid-b", pod("b", "n2", {0})).ok()) << "r1's slice is full";
  EXPECT_EQ((*link)->mode(), LinkMode::kFallback);
  (*link)->Release(local, "k8s/ns/uid-a", "pod/ns/a");
  ASSERT_TRUE((*link)->ReserveAndCommit(local, "k8s/ns/uid-b", pod("b", "n2", {0, 1, 2, 3})).ok());
  ASSERT_TRUE((*link)->ReserveAndCommit(local, "k8s/ns/uid-c", pod("c", "n6", {0, 1, 2, 3, 4, 5, 6, 7})).ok());

  // A replica serves again at the same address once the killed one's lease has expired.
  testing::Replica* again = StartReplica("a2", SharedRacks(), {}, listen);
  ASSERT_EQ(WaitForLeader({again}, milliseconds(testing::kLeaseTtlS * 1000 + 5000)), again);
  const std::vector<OwnAllocation> own = {{"k8s/ns/uid-b", *local.Find("pod/ns/b")},
                                          {"k8s/ns/uid-c", *local.Find("pod/ns/c")}};
  EXPECT_EQ(WaitFor(
                "the link back in shared mode", [&] { return (*link)->Sync(local, own, false).ok(); }, Watched({again}),
                milliseconds(10000)),
            "");
  LedgerClient client = ClientOf({again});
  EXPECT_EQ(Owners(client), (std::set<std::string>{"k8s/ns/uid-b", "k8s/ns/uid-c", "slurm/c1/1"}));
  EXPECT_EQ(StoredKeys(), 3u);
  absl::StatusOr<v1::StatusResponse> status = client.Status();
  ASSERT_TRUE(status.ok()) << status.status();
  for (const v1::RackDraw& rack : status->racks())
    EXPECT_DOUBLE_EQ(rack.k8s_kw(), rack.rack() == "r1" ? 4 : 8) << rack.rack() << ": nothing lost or doubled";
  EXPECT_NE(local.Find("slurm/c1/1"), nullptr) << "Slurm's allocation mirrored again";
}

}  // namespace
}  // namespace rackwise::ledger
