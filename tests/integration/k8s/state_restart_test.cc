// State that survives: the real rackwise-extender process is started, an operator sets a cap, a node's health
// and failed GPU, and places an allocation over gRPC; the process is killed with SIGKILL (no chance to flush
// anything) and started again on the same description. The cap, the health, the failed GPU and the allocation
// must all be back once /readyz answers 200, and the allocation's GPUs must not be given out again.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "extender_fixture.h"
#include "extender_process.h"
#include "rackwise/cluster_description.h"
#include "rackwise/testing/child_process.h"
#include "rackwise/v1/placement_service.grpc.pb.h"

namespace rackwise::k8s::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One run of the real extender binary on ports it picks itself, its stderr in a log file.
class ExtenderRun {
 public:
  ExtenderRun(const fs::path& dir, const std::string& run) : log_(dir / (run + ".log")) {}

  void Start(const fs::path& cluster, const fs::path& token) {
    ASSERT_EQ(process_.Start(RACKWISE_EXTENDER_BINARY,
                             {"--cluster", cluster.string(), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
                              "--admin-token-file", token.string()},
                             log_.string()),
              "");
  }

  // Waits until /readyz answers 200 (the state file is read back by then); fails at once, with the log, if the
  // process dies.
  void WaitReady() {
    httplib::Client http("127.0.0.1", process_.port());
    http.set_connection_timeout(1, 0);
    const std::string why = rackwise::testing::WaitFor(
        "/readyz to answer 200",
        [&] {
          auto res = http.Get("/readyz");
          return res && res->status == 200;
        },
        std::chrono::seconds(60), [&] { return process_.Alive() ? "" : std::string("rackwise-extender exited"); });
    ASSERT_EQ(why, "") << ReadAll(log_);
  }

  void Crash() { process_.Crash(); }

  std::unique_ptr<v1::Placement::Stub> Stub() const {
    return v1::Placement::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(process_.grpc_port()), grpc::InsecureChannelCredentials()));
  }
  std::string log() const { return ReadAll(log_); }

 private:
  fs::path log_;
  ExtenderProcess process_;
};

std::unique_ptr<grpc::ClientContext> Admin() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer 7c0e4f9a2b6d1e8f3a5c9b0d4e7f1a2c6b8d0e3f5a7c9b1d");
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

double CapWatts(v1::Placement::Stub* stub, const std::string& rack) {
  v1::ClusterStateResponse state;
  EXPECT_TRUE(stub->ClusterState(Admin().get(), v1::ClusterStateRequest(), &state).ok());
  for (const v1::RackPower& r : state.racks())
    if (r.rack() == rack) return r.cap_watts();
  return -1;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Explains a request allowed only `node`: "fits", or the refusal's reasons ("Not allowed" for the others).
std::string ExplainOn(v1::Placement::Stub* stub, const std::string& node, int gpus) {
  v1::PlaceRequest req;
  req.mutable_request()->set_gpus(gpus);
  req.mutable_request()->set_gpus_per_node(gpus);  // one node: its own reason counts, not the job's
  req.mutable_request()->add_allowed_nodes(node);
  v1::PlaceResponse resp;
  grpc::Status s = stub->Explain(Admin().get(), req, &resp);
  if (!s.ok()) return "error: " + s.error_message();
  if (resp.outcome().has_decision()) return "fits";
  std::string out;
  for (const v1::RefusalReason& r : resp.outcome().refusal().reasons()) out += r.reason() + ";";
  return out;
}

TEST(ExtenderRestart, OperatorStateIsBackAfterKillNine) {
  const fs::path dir = fs::temp_directory_path() / ("rackwise-restart-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct RemoveOnExit {
    fs::path dir;
    ~RemoveOnExit() { fs::remove_all(dir); }
  } remove_on_exit{dir};
  const fs::path cluster = dir / "rackwise.yaml";
  std::ofstream(cluster) << ClusterDescriptionToYaml(MixedCluster());
  const fs::path token = dir / "admin-token";
  std::ofstream(token) << "7c0e4f9a2b6d1e8f3a5c9b0d4e7f1a2c6b8d0e3f5a7c9b1d\n";

  // H100 nodes: b0-r0000-n01..n04 and b0-r0001-n01..n04 (rack caps 30 kW).
  const std::string placed_node = "b0-r0000-n01", drained_node = "b0-r0001-n01", failed_node = "b0-r0001-n02";
  {
    ExtenderRun first(dir, "first");
    ASSERT_NO_FATAL_FAILURE(first.Start(cluster, token));
    ASSERT_NO_FATAL_FAILURE(first.WaitReady());
    auto stub = first.Stub();
    v1::SetPowerCapRequest cap;
    cap.set_name("b0-r0001");
    cap.set_power_cap_kw(21.5);
    v1::SetPowerCapResponse cap_resp;
    ASSERT_TRUE(stub->SetPowerCap(Admin().get(), cap, &cap_resp).ok()) << first.log();
    v1::SetNodeHealthRequest drain;
    drain.set_node(drained_node);
    drain.set_health(v1::NODE_HEALTH_DRAINED);
    v1::SetNodeHealthResponse health_resp;
    ASSERT_TRUE(stub->SetNodeHealth(Admin().get(), drain, &health_resp).ok());
    v1::SetNodeHealthRequest fail_gpu;
    fail_gpu.set_node(failed_node);
    fail_gpu.add_failed_gpus(3);
    ASSERT_TRUE(stub->SetNodeHealth(Admin().get(), fail_gpu, &health_resp).ok());
    v1::PlaceRequest place;
    place.mutable_request()->set_id("operator-job");
    place.mutable_request()->set_gpus(8);
    place.mutable_request()->set_watts_per_gpu(500);
    place.mutable_request()->add_allowed_nodes(placed_node);
    v1::PlaceResponse placed;
    ASSERT_TRUE(stub->Place(Admin().get(), place, &placed).ok());
    ASSERT_TRUE(placed.outcome().has_decision());
    // What the operator sees before the crash.
    EXPECT_DOUBLE_EQ(CapWatts(stub.get(), "b0-r0001"), 21'500);
    EXPECT_TRUE(Has(ExplainOn(stub.get(), drained_node, 1), "Node drained"));
    EXPECT_TRUE(Has(ExplainOn(stub.get(), failed_node, 8), "Insufficient free GPUs"));
    EXPECT_TRUE(Has(ExplainOn(stub.get(), placed_node, 1), "Insufficient free GPUs"));
    first.Crash();  // SIGKILL: nothing is flushed on the way out
  }
  ASSERT_TRUE(fs::exists(dir / "rackwise.state.yaml")) << "the state file is beside the description";

  ExtenderRun second(dir, "second");
  ASSERT_NO_FATAL_FAILURE(second.Start(cluster, token));
  ASSERT_NO_FATAL_FAILURE(second.WaitReady());
  auto stub = second.Stub();
  EXPECT_DOUBLE_EQ(CapWatts(stub.get(), "b0-r0001"), 21'500) << second.log();
  EXPECT_DOUBLE_EQ(CapWatts(stub.get(), "b0-r0000"), 30'000);
  EXPECT_TRUE(Has(ExplainOn(stub.get(), drained_node, 1), "Node drained"));
  EXPECT_TRUE(Has(ExplainOn(stub.get(), failed_node, 8), "Insufficient free GPUs"));
  EXPECT_EQ(ExplainOn(stub.get(), failed_node, 7), "fits");
  EXPECT_TRUE(Has(ExplainOn(stub.get(), placed_node, 1), "Insufficient free GPUs")) << "the allocation's GPUs are held";
  v1::ClusterStateResponse state;
  ASSERT_TRUE(stub->ClusterState(Admin().get(), v1::ClusterStateRequest(), &state).ok());
  EXPECT_EQ(state.allocations(), 1u);
  // The allocation is the operator's again: it can be released, and then its GPUs are free.
  v1::ReleaseRequest release;
  release.set_id("operator-job");
  v1::ReleaseResponse released;
  ASSERT_TRUE(stub->Release(Admin().get(), release, &released).ok());
  EXPECT_TRUE(released.released());
  EXPECT_EQ(ExplainOn(stub.get(), placed_node, 8), "fits");
  second.Crash();
}

}  // namespace
}  // namespace rackwise::k8s::testing
