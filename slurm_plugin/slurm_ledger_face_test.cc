// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm face of the shared power ledger without Slurm: owner ids, metrics, the reservations of jobs that did
// not start, and the face against an in-process ledger replica (ledger_service/testdata/two_racks_shared.yaml:
// per rack a 16 kW budget of 1 kW GPUs; slurm/c1/'s slice is 4 GPUs, k8s/'s 8): reserve and release through it,
// a refusal naming the shared ledger, nothing synchronised before the plugin's list is whole, fallback within the
// slice with its metrics, and the return reconciling the whole slurm/c1/ list.
#include "slurm_ledger_face.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "in_process_ledger.h"
#include "rackwise/cluster_state.h"
#include "test_support.h"

namespace rackwise::slurm {
namespace {

using ledger::testing::MakeAllocation;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SlurmOwnerPrefix, IsSlurmClusterAndRefusesWhatCannotBeASegment) {
  ASSERT_TRUE(SlurmOwnerPrefix("rwtest").ok());
  EXPECT_EQ(*SlurmOwnerPrefix("rwtest"), "slurm/rwtest/");
  EXPECT_FALSE(SlurmOwnerPrefix("").ok());
  EXPECT_FALSE(SlurmOwnerPrefix("a/b").ok());
  EXPECT_FALSE(SlurmOwnerPrefix("a b").ok());
}

TEST(UnconfirmedReservations, OnlyJobsNotStartedOtherThanTheOneTestedAreStale) {
  UnconfirmedReservations u;
  u.Add(5);
  u.Add(6);
  u.Add(7);
  u.Confirm(7);
  u.Add(8);
  EXPECT_EQ(u.TakeStale(6, [](uint32_t id) { return id == 5; }), std::vector<uint32_t>{8});
  EXPECT_FALSE(u.empty()) << "the job tested now keeps its reservation until it starts or is tried again";
  u.Confirm(6);
  EXPECT_TRUE(u.empty());
}

class SlurmLedgerFaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    description_ = ledger::testing::LoadDescription(ledger::testing::SharedRacks());
    server_ = std::make_unique<ledger::testing::InProcessLedger>(description_);
    description_.mutable_ledger()->set_url(server_->address());
    absl::StatusOr<Topology> t = Topology::Build(description_);
    ASSERT_TRUE(t.ok()) << t.status();
    topology_ = std::make_unique<Topology>(*std::move(t));
    local_ = std::make_unique<Ledger>(*topology_);
    dir_ = std::filesystem::temp_directory_path() / ("rackwise-face-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    SlurmLedgerFace::Options options{.shared_interval = std::chrono::milliseconds(50),
                                     .fallback_interval = std::chrono::milliseconds(50),
                                     .metrics_path = (dir_ / "rackwise_ledger.prom").string()};
    auto face = SlurmLedgerFace::Create(*topology_, description_, "c1", &mu_, local_.get(), options,
                                        [this](bool, const std::string& line) {
                                          std::lock_guard lock(log_mu_);
                                          logs_ += line + "\n";
                                        });
    ASSERT_TRUE(face.ok()) << face.status();
    face_ = *std::move(face);
  }
  void TearDown() override {
    face_.reset();
    std::filesystem::remove_all(dir_);
  }
  Allocation Job(const std::string& id, const std::string& node, std::initializer_list<uint32_t> gpus) {
    return ledger::testing::LocalAllocation(*topology_, id, node, gpus);
  }
  std::vector<std::string> Stored() { return ledger::testing::StoredOwners(*server_); }
  // Waits (bounded) until the face's thread has brought it to the mode asked for.
  bool WaitFallback(bool fallback) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (face_->in_fallback() != fallback && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return face_->in_fallback() == fallback;
  }
  std::string Metrics() {
    std::ifstream in(dir_ / "rackwise_ledger.prom");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool WaitMetrics(const std::string& line) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (Metrics().find(line) == std::string::npos && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Metrics().find(line) != std::string::npos;
  }

  v1::ClusterDescription description_;
  std::unique_ptr<ledger::testing::InProcessLedger> server_;
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<Ledger> local_;
  std::timed_mutex mu_;
  std::filesystem::path dir_;
  std::mutex log_mu_;
  std::string logs_;
  std::unique_ptr<SlurmLedgerFace> face_;
};

TEST_F(SlurmLedgerFaceTest, ReservesThroughTheLedgerAndARefusalNamesIt) {
  // Kubernetes holds 12 of r1's 16 GPUs of budget.
  ASSERT_TRUE(server_->ledger().Reserve(MakeAllocation("k8s/ns/a", "n1", {0, 1, 2, 3, 4, 5, 6, 7})).ok());
  ASSERT_TRUE(server_->ledger().Reserve(MakeAllocation("k8s/ns/b", "n2", {0, 1, 2, 3})).ok());
  {
    std::lock_guard lock(mu_);
    face_->ReconcileSoon();
  }
  ASSERT_TRUE(WaitFallback(false));
  std::lock_guard lock(mu_);
  EXPECT_TRUE(face_->IsMirrored("k8s/ns/a"));
  ASSERT_TRUE(face_->Reserve(Job("1", "n3", {0, 1, 2, 3})).ok());
  EXPECT_NE(local_->Find("1"), nullptr);
  absl::Status refused = face_->Reserve(Job("2", "n4", {0}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("shared power ledger"), std::string::npos) << refused;
  EXPECT_EQ(local_->Find("2"), nullptr);
  EXPECT_EQ(Stored(), (std::vector<std::string>{"k8s/ns/a", "k8s/ns/b", "slurm/c1/1"}));
  EXPECT_NE(face_->ReasonNote().find("shared power ledger: 2 allocations of other owners counted"), std::string::npos)
      << face_->ReasonNote();
  face_->Release("1");
  face_->Release("never-held");
  EXPECT_EQ(local_->Find("1"), nullptr);
  EXPECT_EQ(Stored(), (std::vector<std::string>{"k8s/ns/a", "k8s/ns/b"}));
}

TEST_F(SlurmLedgerFaceTest, NothingIsSynchronisedBeforeTheListIsWhole) {
  ASSERT_TRUE(server_->ledger().Reserve(MakeAllocation("slurm/c1/99", "n5", {0})).ok());  // from before a restart
  {
    std::lock_guard lock(mu_);
    face_->SyncLocked();
    EXPECT_TRUE(face_->in_fallback()) << "no list yet: no reconcile that would drop slurm/c1/99";
  }
  EXPECT_EQ(Stored(), (std::vector<std::string>{"slurm/c1/99"}));
  {
    std::lock_guard lock(mu_);
    ASSERT_TRUE(local_->Commit(Job("7", "n6", {0, 1})).ok());  // the rebuilt list: job 7 runs, 99 ended meanwhile
    face_->ReconcileSoon();
  }
  ASSERT_TRUE(WaitFallback(false));
  EXPECT_EQ(Stored(), (std::vector<std::string>{"slurm/c1/7"}));
}

TEST_F(SlurmLedgerFaceTest, FallsBackWithinTheSliceAndReconcilesOnReturn) {
  {
    std::lock_guard lock(mu_);
    face_->ReconcileSoon();
  }
  ASSERT_TRUE(WaitFallback(false));
  ASSERT_TRUE(WaitMetrics("rackwise_ledger_fallback 0\n"));
  {
    std::lock_guard lock(mu_);
    ASSERT_TRUE(face_->Reserve(Job("1", "n1", {0})).ok());
  }
  server_->Stop();
  ASSERT_TRUE(WaitFallback(true));
  ASSERT_TRUE(WaitMetrics("rackwise_ledger_fallbacks_total 1\n")) << Metrics();
  EXPECT_NE(Metrics().find("rackwise_ledger_fallback 1\n"), std::string::npos);
  {
    std::lock_guard lock(mu_);
    // Slurm's slice of r2 is 4 GPUs: 4 fit, a fifth does not, and the reason says why.
    ASSERT_TRUE(face_->Reserve(Job("2", "n5", {0, 1, 2, 3})).ok());
    absl::Status full = face_->Reserve(Job("3", "n6", {0}));
    EXPECT_NE(full.message().find("shared power ledger unreachable, within slurm/c1/'s guaranteed slice"),
              std::string::npos)
        << full;
    EXPECT_NE(face_->ReasonNote().find("shared power ledger unreachable"), std::string::npos);
    face_->Release("1");  // ended meanwhile: the return's reconcile releases it there
  }
  server_->Restart();
  ASSERT_TRUE(WaitFallback(false));
  EXPECT_EQ(Stored(), (std::vector<std::string>{"slurm/c1/2"}));
  ASSERT_TRUE(WaitMetrics("rackwise_ledger_fallback 0\n"));
  std::lock_guard lock(log_mu_);
  // One line per change of mode: reached at the first sync, lost, back.
  EXPECT_EQ(Count(logs_, "unreachable"), 1) << logs_;
  EXPECT_EQ(Count(logs_, "power ledger back"), 2) << logs_;
}

TEST_F(SlurmLedgerFaceTest, AnUnreachableLedgerIsFoundOutWithoutThePluginsLock) {
  server_->Stop();
  // slurmctld's decisions hold the plugin's lock: the face must learn that the ledger is gone (and say so) while
  // it is held, instead of waiting for it to make a round trip that may take the whole deadline under it.
  std::lock_guard lock(mu_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  auto said = [this] {
    std::lock_guard log_lock(log_mu_);
    return logs_.find("power ledger unreachable since the start") != std::string::npos;
  };
  while (!said() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(said()) << logs_;
  EXPECT_TRUE(WaitMetrics("rackwise_ledger_fallback 1\n")) << Metrics();
  EXPECT_TRUE(face_->in_fallback());
}

}  // namespace
}  // namespace rackwise::slurm
