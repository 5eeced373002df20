// NodeAgent rounds over in-memory boards and the real lease keeper (a state file in a temporary directory):
// limits follow pods, a source that cannot be read changes nothing, a limit that cannot be set is reported
// and retried, and a new agent on the same state file restores what ended while it was away.
#include "node_agent.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "lease_limits.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_agent {
namespace {

class MemoryGpus : public node_power::GpuPowerControl {
 public:
  MemoryGpus() {
    for (int i = 0; i < 4; ++i) limits_.push_back({100'000, 700'000, 700'000, 700'000});
  }
  absl::StatusOr<int> DeviceCount() override { return static_cast<int>(limits_.size()); }
  absl::StatusOr<int> IndexOfUuid(std::string_view uuid) override {
    for (int i = 0; i < 4; ++i) {
      if (uuid == absl::StrCat("GPU-000", i)) return i;
    }
    return absl::NotFoundError(absl::StrCat("no GPU ", std::string(uuid)));
  }
  absl::StatusOr<node_power::GpuPowerLimits> Limits(int i) override { return limits_.at(i); }
  absl::Status SetLimit(int i, int64_t mw) override {
    if (failing.count(i)) return absl::PermissionDeniedError(absl::StrCat("GPU ", i, ": Insufficient Permissions"));
    limits_.at(i).current_mw = mw;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> PowerUsage(int) override { return 100'000; }
  int64_t current(int i) const { return limits_.at(i).current_mw; }

  std::set<int> failing;

 private:
  std::vector<node_power::GpuPowerLimits> limits_;
};

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_node_agent.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    Restart();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A fresh agent (and keeper) on the same state file, as after a restart of the process.
  void Restart() {
    leases_ = std::make_unique<node_power::PowerLimitLeases>(&gpus_, dir_ + "/leases");
    limits_ = std::make_unique<LeaseLimits>(leases_.get());
    AgentSources sources;
    sources.annotated_pods = [this]() -> absl::StatusOr<std::vector<PodWatts>> {
      if (!api_up_) return absl::UnavailableError("LIST /api/v1/pods: connection refused");
      return pods_;
    };
    sources.pod_devices = [this]() -> absl::StatusOr<std::vector<PodDevices>> { return devices_; };
    agent_ = std::make_unique<NodeAgent>(std::move(sources), &gpus_, limits_.get(), &metrics_,
                                         [this](const std::string& line) { log_ += line + "\n"; });
  }
  void Run() { ASSERT_TRUE(agent_->RunOnce().ok()); }

  std::string dir_, log_;
  MemoryGpus gpus_;
  AgentMetrics metrics_;
  std::vector<PodWatts> pods_;
  std::vector<PodDevices> devices_;
  bool api_up_ = true;
  std::unique_ptr<node_power::PowerLimitLeases> leases_;
  std::unique_ptr<LeaseLimits> limits_;
  std::unique_ptr<NodeAgent> agent_;
};

TEST_F(NodeAgentTest, LimitFollowsThePod) {
  pods_ = {{"ml", "a", "u1", 450'000, ""}};
  devices_ = {{"ml", "a", {"GPU-0001", "3"}}};
  Run();
  EXPECT_EQ(gpus_.current(0), 700'000);
  EXPECT_EQ(gpus_.current(1), 450'000);
  EXPECT_EQ(gpus_.current(3), 450'000);
  EXPECT_EQ(metrics_.applied(), 1u);
  Run();  // nothing changes: not applied again
  EXPECT_EQ(metrics_.applied(), 1u);
  EXPECT_NE(metrics_.Render().find("rackwise_node_agent_gpu_power_limit_watts{gpu=\"3\",pod=\"ml/a\"} 450.000"),
            std::string::npos)
      << metrics_.Render();
  pods_.clear();
  devices_.clear();
  Run();
  EXPECT_EQ(gpus_.current(1), 700'000);
  EXPECT_EQ(gpus_.current(3), 700'000);
  EXPECT_EQ(metrics_.restored(), 1u);
}

TEST_F(NodeAgentTest, UnreadableApiServerChangesNothing) {
  pods_ = {{"ml", "a", "u1", 450'000, ""}};
  devices_ = {{"ml", "a", {"0"}}};
  Run();
  api_up_ = false;
  devices_.clear();  // even with the pod gone from the kubelet, the limit stays until the API server answers
  absl::Status s = agent_->RunOnce();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("apiserver"), std::string::npos) << s;
  EXPECT_EQ(gpus_.current(0), 450'000);
  EXPECT_NE(metrics_.Render().find("rackwise_node_agent_round_failures_total{source=\"apiserver\"} 1"),
            std::string::npos);
}

TEST_F(NodeAgentTest, FailedLimitIsReportedNotHalfAppliedAndRetried) {
  gpus_.failing = {2};
  pods_ = {{"ml", "a", "u1", 450'000, ""}};
  devices_ = {{"ml", "a", {"1", "2"}}};
  Run();
  EXPECT_EQ(gpus_.current(1), 700'000);  // all or nothing
  EXPECT_EQ(gpus_.current(2), 700'000);
  EXPECT_EQ(metrics_.apply_failed(), 1u);
  EXPECT_NE(metrics_.Render().find("rackwise_node_agent_pod_refused{namespace=\"ml\",pod=\"a\"} 1"), std::string::npos);
  EXPECT_NE(log_.find("Insufficient Permissions"), std::string::npos) << log_;
  gpus_.failing.clear();
  Run();
  EXPECT_EQ(gpus_.current(2), 450'000);
  EXPECT_EQ(metrics_.Render().find("rackwise_node_agent_pod_refused{"), std::string::npos);
}

TEST_F(NodeAgentTest, RestartRestoresPodsThatEndedMeanwhile) {
  pods_ = {{"ml", "a", "u1", 450'000, ""}, {"ml", "b", "u2", 300'000, ""}};
  devices_ = {{"ml", "a", {"0"}}, {"ml", "b", {"1"}}};
  Run();
  EXPECT_EQ(gpus_.current(1), 300'000);
  pods_.pop_back();  // b ends while no agent runs
  devices_.pop_back();
  Restart();
  Run();
  EXPECT_EQ(gpus_.current(0), 450'000);
  EXPECT_EQ(gpus_.current(1), 700'000);
}

TEST(GroupLeases, ByOwnerSortedAndMixedLimitsAreRedone) {
  std::vector<HeldLimit> held = GroupLeases({{3, "ml/a/u1", 450'000, 700'000},
                                             {0, "ml/a/u1", 450'000, 700'000},
                                             {1, "ml/b/u2", 300'000, 700'000},
                                             {2, "ml/b/u2", 400'000, 700'000}});
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].gpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(held[0].milliwatts, 450'000);
  EXPECT_EQ(held[1].milliwatts, -1);
}

}  // namespace
}  // namespace rackwise::node_agent
