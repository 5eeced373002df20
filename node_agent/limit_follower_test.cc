// The follower: how steered targets fold into the pods to plan (pure), what happens when the extender cannot be
// read, and whole agent rounds that apply and restore steered limits through the real lease keeper on the fake
// libnvidia-ml.so.1 (tests/fake_nvml, dlopened for real).
#include "limit_follower.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "fake_nvml_fixture.h"
#include "lease_limits.h"
#include "node_agent.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_agent {
namespace {

using k8s::LimitsDocument;
using k8s::SteeredLimit;

PodWatts Annotated(const std::string& name, int64_t mw) { return PodWatts{"ml", name, "u-" + name, mw, ""}; }

SteeredLimit Entry(const std::string& name, int64_t target, int64_t declared, const std::string& node = "gpu001",
                   const std::string& uid = "") {
  return SteeredLimit{"pod/ml/" + name, target, declared, {{"ml", name, uid.empty() ? "u-" + name : uid, node}}};
}

TEST(SteerPods, TakesTheLowerOfAnnotationAndTarget) {
  LimitsDocument d{3, {Entry("a", 400'000, 600'000), Entry("b", 650'000, 650'000)}};
  std::vector<PodWatts> pods = SteerPods({Annotated("a", 600'000), Annotated("b", 500'000)}, d, "gpu001");
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].milliwatts_per_gpu, 400'000);
  EXPECT_EQ(pods[1].milliwatts_per_gpu, 500'000);  // the annotation is lower: it stays
}

TEST(SteerPods, UnannotatedPodsOnlyWhileHeldBelowTheirDeclaredWatts) {
  LimitsDocument d{3, {Entry("held", 300'000, 700'000), Entry("free", 700'000, 700'000)}};
  std::vector<PodWatts> pods = SteerPods({}, d, "gpu001");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].Owner(), "ml/held/u-held");
  EXPECT_EQ(pods[0].milliwatts_per_gpu, 300'000);
}

TEST(SteerPods, IgnoresOtherNodesOtherIncarnationsAndRefusedAnnotations) {
  PodWatts refused = Annotated("bad", 0);
  refused.error = "not a number";
  LimitsDocument d{3,
                   {Entry("elsewhere", 300'000, 700'000, "gpu002"), Entry("a", 300'000, 700'000, "gpu001", "old-uid"),
                    Entry("bad", 300'000, 700'000)}};
  std::vector<PodWatts> pods = SteerPods({Annotated("a", 600'000), refused}, d, "gpu001");
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].milliwatts_per_gpu, 600'000);
  EXPECT_EQ(pods[1].error, "not a number");
}

TEST(LimitFollower, KeepsTheLastDocumentWhileTheExtenderIsAwayAndLogsOnce) {
  absl::StatusOr<LimitsDocument> answer = LimitsDocument{5, {Entry("a", 400'000, 600'000)}};
  std::string log;
  LimitFollower follower(
      "gpu001", [&] { return answer; }, [&](const std::string& line) { log += line + "\n"; });
  EXPECT_EQ(follower.Steer({Annotated("a", 600'000)})[0].milliwatts_per_gpu, 400'000);
  EXPECT_TRUE(absl::StrContains(log, "pod ml/a -> 400 W per GPU (declared 600 W)")) << log;
  answer = absl::UnavailableError("GET http://x/limits: Connection refused");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(follower.Steer({Annotated("a", 600'000)})[0].milliwatts_per_gpu, 400'000);
  EXPECT_EQ(follower.status().fetch_failures, 3u);
  EXPECT_EQ(follower.status().generation, 5u);
  ASSERT_EQ(follower.status().steered.size(), 1u);
  EXPECT_EQ(follower.status().steered[0], (std::pair<std::string, int64_t>{"ml/a", 400'000}));
  size_t first = log.find("Connection refused");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("Connection refused", first + 1), std::string::npos) << log;  // once per change
  answer = LimitsDocument{6, {}};
  EXPECT_EQ(follower.Steer({Annotated("a", 600'000)})[0].milliwatts_per_gpu, 600'000);
  EXPECT_TRUE(absl::StrContains(log, "the extender answers again")) << log;
}

TEST(FetchLimits, RefusesABadUrlOrTokenFileWithoutConnecting) {
  absl::StatusOr<LimitsDocument> d = FetchLimits({"ftp://x"}, "gpu001");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  d = FetchLimits({"http://127.0.0.1:notaport"}, "gpu001");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  d = FetchLimits({"http://127.0.0.1:1", "", "/nonexistent/token"}, "gpu001");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(d.status().message(), "--limits-token-file /nonexistent/token")) << d.status();
}

// Whole rounds on the fake NVML: a steered pod's GPUs go down in place, back up, and to their recorded default
// when the pod ends; a board that refuses the limit is reported and the others are set back.
class SteeredRounds : public node_power::FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    nvml_ = Open();
    ASSERT_NE(nvml_, nullptr);
    leases_ = std::make_unique<node_power::PowerLimitLeases>(nvml_.get(), dir_ + "/leases");
    limits_ = std::make_unique<LeaseLimits>(leases_.get());
    follower_ = std::make_unique<LimitFollower>(
        "gpu001", [this] { return document_; }, [this](const std::string& l) { log_ += l + "\n"; });
    AgentSources sources;
    sources.annotated_pods = [this]() -> absl::StatusOr<std::vector<PodWatts>> { return pods_; };
    sources.pod_devices = [this]() -> absl::StatusOr<std::vector<PodDevices>> { return devices_; };
    sources.steer = [this](std::vector<PodWatts> p) { return follower_->Steer(std::move(p)); };
    agent_ = std::make_unique<NodeAgent>(std::move(sources), nvml_.get(), limits_.get(), &metrics_,
                                         [this](const std::string& l) { log_ += l + "\n"; });
  }
  void Run() { ASSERT_TRUE(agent_->RunOnce().ok()) << log_; }

  std::unique_ptr<node_power::GpuPowerControl> nvml_;
  std::unique_ptr<node_power::PowerLimitLeases> leases_;
  std::unique_ptr<LeaseLimits> limits_;
  std::unique_ptr<LimitFollower> follower_;
  std::unique_ptr<NodeAgent> agent_;
  AgentMetrics metrics_;
  std::string log_;
  std::vector<PodWatts> pods_;
  std::vector<PodDevices> devices_;
  LimitsDocument document_;
};

TEST_F(SteeredRounds, LowerRaiseAndRestoreThroughNvml) {
  pods_ = {Annotated("a", 600'000)};  // a declares 600 W; b has no annotation
  devices_ = {{"ml", "a", {"GPU-aaaa-0", "GPU-aaaa-1"}}, {"ml", "b", {"GPU-aaaa-2"}}};
  document_ = {1, {Entry("a", 600'000, 600'000), Entry("b", 700'000, 700'000)}};
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{600'000, 600'000, 700'000, 700'000}));

  document_ = {2, {Entry("a", 420'000, 600'000), Entry("b", 490'000, 700'000)}};
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{420'000, 420'000, 490'000, 700'000}));
  // Set in place: a's boards never went back to 700 W on the way down.
  for (const std::string& call : Calls("nvmlDeviceSetPowerManagementLimit"))
    EXPECT_FALSE(absl::StrContains(call, "gpu=0 limit=700000")) << call;

  document_ = {3, {Entry("a", 600'000, 600'000), Entry("b", 700'000, 700'000)}};
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{600'000, 600'000, 700'000, 700'000}));

  document_ = {4, {Entry("a", 300'000, 600'000)}};
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{300'000, 300'000, 700'000, 700'000}));
  pods_.clear();  // a ends: its recorded default comes back
  devices_.clear();
  document_ = {5, {}};
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{700'000, 700'000, 700'000, 700'000}));
}

TEST_F(SteeredRounds, ABoardThatRefusesIsReportedAndRetried) {
  devices_ = {{"ml", "b", {"GPU-aaaa-2", "GPU-aaaa-3"}}};
  document_ = {1, {Entry("b", 450'000, 700'000)}};
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 3");  // NVML_ERROR_NO_PERMISSION on GPU 3
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{700'000, 700'000, 700'000, 700'000}));  // all or nothing
  EXPECT_TRUE(absl::StrContains(metrics_.Render(), "rackwise_node_agent_pod_refused{namespace=\"ml\",pod=\"b\"} 1"))
      << metrics_.Render();
  EXPECT_TRUE(absl::StrContains(log_, "pod ml/b: rackwise.io/gpu-watts not enforced: cannot set the power limit"))
      << log_;
  ClearFailures();
  Run();
  EXPECT_EQ(CurrentLimits(), (std::vector<int64_t>{700'000, 700'000, 450'000, 450'000}));
  EXPECT_FALSE(absl::StrContains(metrics_.Render(), "rackwise_node_agent_pod_refused{")) << metrics_.Render();
}

}  // namespace
}  // namespace rackwise::node_agent
