// For the ledger service's unit tests: one replica that leads, on a fake store, serving rackwise.v1.PowerLedger
// on a free loopback port (plain or TLS): what a face's client and link talk to, without etcd. Callers are
// checked against the access given, or (without one) as on an --insecure-loopback replica.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fake_store.h"
#include "ledger_grpc_service.h"
#include "ledger_shares.h"
#include "rackwise/cluster_description.h"
#include "rackwise/cluster_state.h"
#include "shared_ledger.h"
#include "test_support.h"

namespace rackwise::ledger::testing {

class InProcessLedger {
 public:
  // `description` must outlive this; its `ledger:` shares are the slices the ledger enforces.
  InProcessLedger(const v1::ClusterDescription& description,
                  std::shared_ptr<grpc::ServerCredentials> credentials = nullptr,
                  std::optional<LedgerAccess> access = std::nullopt)
      : access_(access ? *std::move(access) : LedgerAccess()) {
    if (!access) access_.AllowAnonymous();
    absl::StatusOr<Topology> t = Topology::Build(description);
    EXPECT_TRUE(t.ok()) << t.status();
    topology_ = std::make_unique<Topology>(*std::move(t));
    absl::StatusOr<GuaranteedSlices> slices = SlicesOfDescription(*topology_, description);
    EXPECT_TRUE(slices.ok()) << slices.status();
    ledger_ = std::make_unique<SharedLedger>(topology_.get(), &store_, *std::move(slices));
    EXPECT_TRUE(ledger_->TakeOver(SharedLedger::Clock::now() + std::chrono::hours(1)).ok());
    service_ = std::make_unique<LedgerGrpcService>(
        ledger_.get(), LeaderInfo{"a", ""}, [this] { return self_; }, &access_, &audit_);
    credentials_ = std::move(credentials);
    server_ = std::make_unique<LedgerGrpcServer>(service_.get(), "127.0.0.1:0", credentials_);
    EXPECT_TRUE(server_->Start().ok());
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    self_ = {"a", address_};
  }

  // Stops answering (a replica gone), and starts again on the same port with the same state (it came back).
  void Stop() { server_->Stop(); }
  void Restart() {
    server_ = std::make_unique<LedgerGrpcServer>(service_.get(), address_, credentials_);
    EXPECT_TRUE(server_->Start().ok());
  }
  const std::string& address() const { return address_; }
  SharedLedger& ledger() { return *ledger_; }
  FakeStore& store() { return store_; }
  LedgerAudit& audit() { return audit_; }

 private:
  FakeStore store_;
  LedgerAccess access_;
  LedgerAudit audit_{nullptr};
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<SharedLedger> ledger_;
  LeaderInfo self_;
  std::unique_ptr<LedgerGrpcService> service_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<LedgerGrpcServer> server_;
  std::string address_;
};

// Two racks whose power Slurm and Kubernetes share (testdata/two_racks_shared.yaml, with ledger shares).
inline std::string SharedRacks() { return std::string(RACKWISE_LEDGER_TESTDATA) + "/two_racks_shared.yaml"; }

// A description read from `path`, or a failed expectation.
inline v1::ClusterDescription LoadDescription(const std::string& path) {
  absl::StatusOr<v1::ClusterDescription> d = LoadClusterDescription(path, nullptr);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : v1::ClusterDescription();
}

// A face's local allocation `id` of `gpus` on `node`, or a failed expectation.
inline Allocation LocalAllocation(const Topology& topology, const std::string& id, const std::string& node,
                                  std::initializer_list<uint32_t> gpus) {
  absl::StatusOr<Allocation> a = AllocationFromProto(topology, MakeAllocation(id, node, gpus));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : Allocation{};
}

// The owners the replica's store holds, in key order.
inline std::vector<std::string> StoredOwners(InProcessLedger& ledger) {
  std::vector<std::string> out;
  for (const auto& [owner, value] : ledger.store().data) out.push_back(owner);
  return out;
}

}  // namespace rackwise::ledger::testing
