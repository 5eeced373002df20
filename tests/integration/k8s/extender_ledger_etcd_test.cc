// The extender as a client of the shared power ledger, over real sockets: kube-scheduler's exact payloads to
// the extender's HTTP server, the extender's LedgerLink to a real rackwise-ledger replica over gRPC,
// and the replica's etcd (testdata/two_racks_shared.yaml: per rack a 16 kW budget of 1 kW GPUs, Slurm's slice
// 4 GPUs, Kubernetes's 8). Slurm stands in as a plain LedgerClient. Pods bind while Slurm holds room and the
// sum never passes a cap; the ledger's refusal refuses a bind; the ledger killed, the extender decides within
// its slice and says so (filter reasons, /metrics, a log line); the ledger back, the extender reconciles and
// the ledger holds exactly what the extender holds.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>

#include "etcd_test_fixture.h"
#include "extender_fixture.h"
#include "in_process_ledger.h"
#include "ledger_link.h"
#include "reservation_timer.h"
#include "test_support.h"

namespace rackwise::ledger {
namespace {

using std::chrono::milliseconds;
using testing::MakeAllocation;
using testing::SharedRacks;
using testing::WaitFor;
using testing::WholeNode;

// The racks' power is shared, their nodes are not: n1 and n8 are Slurm's, the others Kubernetes's (a face cut
// off cannot know which GPUs the other holds, only that its own draw stays within its slice).
const std::vector<std::string> kRack1 = {"n2", "n3", "n4"}, kRack2 = {"n5", "n6", "n7"};

class EtcdExtenderTest : public testing::LedgerEtcdTest {
 protected:
  // The extender of `description` behind a real HTTP server, booking through a LedgerLink to the ledger. It syncs
  // once (SetSynced), then on the timer's beat once StartBeat is called (as rackwise-extender does from the
  // start): until then the test knows what the extender's mirror holds.
  void StartExtender(const v1::ClusterDescription& description) {
    absl::StatusOr<Topology> topology = Topology::Build(description);
    ASSERT_TRUE(topology.ok()) << topology.status();
    k8s::ExtenderOptions options;
    options.ledger_sync_ms = 100;
    service_ = std::make_unique<k8s::ExtenderService>(std::make_unique<Topology>(std::move(*topology)), options,
                                                      nullptr, &metrics_);
    auto gate = LedgerLink::Create(service_->topology(), description, "k8s/", [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(line);
    });
    ASSERT_TRUE(gate.ok()) << gate.status();
    gate_ = *std::move(gate);
    service_->SetSharedLedger(gate_.get());
    service_->SetSynced(true);
    server_ = std::make_unique<k8s::ExtenderHttpServer>(service_.get(), k8s::HttpServerOptions{});
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void StartBeat() {
    timer_ = std::make_unique<k8s::ReservationTimer>(service_.get(), k8s::SteadyNowMs, 50);
    timer_->Start();
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (timer_) timer_->Stop();
    if (service_) {
      EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants();
    }
  }
  // kube-scheduler's cycle for a 4-GPU pod over `nodes`: the node bound, or "" (the bind's error in *error).
  std::string Schedule(const std::string& name, const std::vector<std::string>& nodes, std::string* error = nullptr) {
    return k8s::testing::ScheduleOver(*client_, k8s::testing::MakePod(name, 4), nodes, error);
  }
  std::string Metrics() {
    auto res = client_->Get("/metrics");
    return res ? res->body : "";
  }
  bool Logged(const std::string& text) {
    std::lock_guard<std::mutex> lock(log_mu_);
    for (const std::string& line : log_)
      if (line.find(text) != std::string::npos) return true;
    return false;
  }
  std::set<std::string> OwnOwners() {
    std::set<std::string> out;
    for (const ledger::OwnAllocation& o : service_->OwnAllocations()) out.insert(o.owner);
    return out;
  }
  void DeletePod(const std::string& name) {
    k8s::PodInfo pod;
    pod.namespace_ = "ml";
    pod.name = name;
    pod.uid = "uid-ml-" + name;
    service_->DeletePod(pod);
  }
  // Every rack's Slurm + Kubernetes draw within its 16 kW budget, per the ledger.
  void ExpectWithinBudgets(LedgerClient& client) {
    absl::StatusOr<v1::StatusResponse> status = client.Status();
    ASSERT_TRUE(status.ok()) << status.status();
    for (const v1::RackDraw& rack : status->racks()) {
      EXPECT_LE(rack.slurm_kw() + rack.k8s_kw(), 16.0) << rack.rack();
    }
  }

  k8s::ExtenderMetrics metrics_;
  std::unique_ptr<k8s::ExtenderService> service_;
  std::unique_ptr<LedgerLink> gate_;
  std::unique_ptr<k8s::ReservationTimer> timer_;
  std::unique_ptr<k8s::ExtenderHttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(EtcdExtenderTest, PodsBindBesideSlurmFallBackWithinTheSliceAndReconcileOnReturn) {
  const std::string listen = absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort());
  testing::Replica* a = StartReplica("a", SharedRacks(), {}, listen);
  ASSERT_EQ(WaitForLeader({a}), a);
  LedgerClient slurm = ClientOf({a});
  ASSERT_TRUE(slurm.Reserve(WholeNode("slurm/c1/1", "n1")).ok());  // 8 of r1's 16: Kubernetes keeps its 8
  v1::ClusterDescription description = testing::LoadDescription(SharedRacks());
  description.mutable_ledger()->set_url(a->address);
  StartExtender(description);
  ASSERT_FALSE(gate_->in_fallback()) << "SetSynced syncs at once: " << gate_->fallback_reason();

  // r1: two 4-GPU pods fit beside Slurm's 8; a third would pass the cap and no node is offered.
  EXPECT_NE(Schedule("p1", kRack1), "");
  EXPECT_NE(Schedule("p2", kRack1), "");
  EXPECT_EQ(Schedule("p3", kRack1), "");
  // r2: Slurm's unused slice (4) is kept free, so Kubernetes borrows up to 12; the ledger refuses the third
  // pod's bind once Slurm has taken 8 there between its filter and its bind.
  EXPECT_NE(Schedule("p4", kRack2), "");
  EXPECT_NE(Schedule("p5", kRack2), "");
  const k8s::Json p6 = k8s::testing::MakePod("p6", 4);
  const k8s::Json filtered = k8s::testing::PostJson(*client_, "/filter", k8s::testing::FilterBody(p6, kRack2));
  ASSERT_FALSE(filtered["NodeNames"].empty()) << filtered.dump();
  const std::string target = filtered["NodeNames"][0].get<std::string>();
  ASSERT_TRUE(slurm.Reserve(WholeNode("slurm/c1/2", "n8")).ok());
  const k8s::Json bound = k8s::testing::PostJson(
      *client_, "/bind",
      k8s::Json({{"PodName", "p6"}, {"PodNamespace", "ml"}, {"PodUID", "uid-ml-p6"}, {"Node", target}}).dump());
  EXPECT_NE(bound["Error"].get<std::string>().find("power ledger refused"), std::string::npos) << bound.dump();
  ExpectWithinBudgets(slurm);
  EXPECT_EQ(Owners(slurm, "k8s/"), OwnOwners());

  // From now on the extender syncs on its beat, as the daemon does.
  StartBeat();
  // The ledger is killed: the extender falls back to its slice (8 per rack, all held) and says so.
  a->process->Signal(SIGKILL);
  ASSERT_EQ(WaitFor(
                "the extender in fallback", [&] { return gate_->in_fallback(); }, {}, milliseconds(10000)),
            "");
  const k8s::Json refused = k8s::testing::PostJson(*client_, "/filter", k8s::testing::FilterBody(p6, kRack1));
  ASSERT_FALSE(refused["FailedNodes"].empty()) << refused.dump();
  EXPECT_NE(refused["FailedNodes"].begin()->get<std::string>().find("shared power ledger unreachable"),
            std::string::npos)
      << refused.dump();
  EXPECT_NE(Metrics().find("rackwise_ledger_fallback 1\n"), std::string::npos);
  EXPECT_NE(Metrics().find("rackwise_ledger_fallbacks_total 1\n"), std::string::npos);
  EXPECT_TRUE(Logged("power ledger unreachable"));
  DeletePod("p1");  // released while cut off: room in the slice again, and the reconcile releases it there
  EXPECT_NE(Schedule("p7", kRack1), "");
  EXPECT_EQ(Schedule("p8", kRack1), "") << "the slice is full again";

  // A replica serves again at the same address once the killed one's lease has expired: the extender
  // reconciles on its beat, and the ledger holds exactly what the extender holds.
  testing::Replica* again = StartReplica("a2", SharedRacks(), {}, listen);
  ASSERT_EQ(WaitForLeader({again}, milliseconds(testing::kLeaseTtlS * 1000 + 5000)), again);
  ASSERT_EQ(
      WaitFor(
          "the extender shared again", [&] { return !gate_->in_fallback(); }, Watched({again}), milliseconds(10000)),
      "");
  EXPECT_TRUE(Logged("power ledger back"));
  EXPECT_NE(Metrics().find("rackwise_ledger_fallback 0\n"), std::string::npos);
  LedgerClient client = ClientOf({again});
  EXPECT_EQ(Owners(client, "k8s/"), OwnOwners());
  EXPECT_EQ(OwnOwners(),
            (std::set<std::string>{"k8s/ml/uid-ml-p2", "k8s/ml/uid-ml-p4", "k8s/ml/uid-ml-p5", "k8s/ml/uid-ml-p7"}));
  EXPECT_EQ(Owners(client, "slurm/"), (std::set<std::string>{"slurm/c1/1", "slurm/c1/2"}));
  ExpectWithinBudgets(client);
  absl::StatusOr<v1::StatusResponse> status = client.Status();
  ASSERT_TRUE(status.ok()) << status.status();
  for (const v1::RackDraw& rack : status->racks()) {
    EXPECT_DOUBLE_EQ(rack.k8s_kw(), 8) << rack.rack() << ": nothing lost or doubled";
  }
}

}  // namespace
}  // namespace rackwise::ledger
