// LedgerClient against two in-process replicas: a replica that passed its leader check but lost its leadership
// before writing (here: fenced out by a newer leader) does not answer for the ledger. The client goes on to the
// replica that leads, so a Release is never dropped as if the ledger had refused it (its owner would stay booked
// until the next whole reconcile).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "fake_store.h"
#include "ledger_client.h"
#include "ledger_grpc_service.h"
#include "rackwise/cluster_description.h"
#include "test_support.h"
#include "testdata_topology.h"

namespace rackwise::ledger {
namespace {

using testing::FakeStore;
using testing::WholeNode;

// One replica in process: its store, its ledger (serving for an hour), and its gRPC service on a free port,
// answering callers without credentials (as with --insecure-loopback).
struct InProcessReplica {
  InProcessReplica(const Topology* topology, std::string id)
      : ledger(topology, &store),
        service(
            &ledger, LeaderInfo{id, ""},
            [id] {
              return LeaderInfo{id, ""};
            },
            &access, &audit),
        server(&service, "127.0.0.1:0") {
    access.AllowAnonymous();
  }
  absl::Status Start() {
    if (absl::Status s = ledger.TakeOver(SharedLedger::Clock::now() + std::chrono::hours(1)); !s.ok()) return s;
    return server.Start();
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", server.port()); }

  FakeStore store;
  SharedLedger ledger;
  LedgerAccess access;
  LedgerAudit audit{nullptr};
  LedgerGrpcService service;
  LedgerGrpcServer server;
};

class LedgerClientFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Topology>> t = testing::TestdataTopology("two_racks.yaml");
    ASSERT_TRUE(t.ok()) << t.status();
    topology_ = std::move(*t);
    deposed_ = std::make_unique<InProcessReplica>(topology_.get(), "deposed");
    leader_ = std::make_unique<InProcessReplica>(topology_.get(), "leader");
    ASSERT_TRUE(deposed_->Start().ok());
    ASSERT_TRUE(leader_->Start().ok());
  }

  std::unique_ptr<Topology> topology_;
  std::unique_ptr<InProcessReplica> deposed_, leader_;
};

TEST_F(LedgerClientFailoverTest, AReplicaFencedOutAfterItsLeaderCheckSendsTheClientOn) {
  // Both held the owner while the deposed replica led; the newer leader holds it still.
  ASSERT_TRUE(deposed_->ledger.Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  ASSERT_TRUE(leader_->ledger.Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  // The deposed replica still believes it serves (its lease deadline is ahead), but its next write is fenced.
  deposed_->store.fenced_out = true;
  LedgerClient client({deposed_->address(), leader_->address()}, std::chrono::milliseconds(5000));
  absl::StatusOr<bool> released = client.Release("slurm/c1/1");
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_TRUE(*released);
  EXPECT_EQ(leader_->ledger.allocation_count(), 0u) << "the release reached the replica that leads";
  EXPECT_EQ(client.current_address(), leader_->address());
  // A reservation goes the same way, and is booked once, by the leader.
  ASSERT_TRUE(client.Reserve(WholeNode("k8s/ns/p", "n2")).ok());
  EXPECT_EQ(leader_->store.data.count("k8s/ns/p"), 1u);
  EXPECT_EQ(deposed_->store.data.count("k8s/ns/p"), 0u);
}

TEST_F(LedgerClientFailoverTest, WithNoReplicaThatCanWriteTheClientSaysSoInsteadOfRefusing) {
  deposed_->store.fenced_out = true;
  leader_->store.fenced_out = true;
  LedgerClient client({deposed_->address(), leader_->address()}, std::chrono::milliseconds(300));
  absl::Status reserved = client.Reserve(WholeNode("k8s/ns/p", "n2"));
  // Out of reach, not a refusal: a face falls back within its slice and reconciles on return.
  EXPECT_EQ(reserved.code(), absl::StatusCode::kDeadlineExceeded) << reserved;
}

}  // namespace
}  // namespace rackwise::ledger
