// JobPowerEnforcer against the fake NVML: which GPUs get a limit, fail closed, and without NVML.
#include "node_power/job_power_enforcer.h"

#include "fake_nvml_fixture.h"
#include "gmock/gmock.h"

namespace rackwise::node_power {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class JobPowerEnforcerTest : public FakeNvmlTest {
 protected:
  JobPowerEnforcer Enforcer(std::string library = RACKWISE_FAKE_NVML) {
    return JobPowerEnforcer([library] { return OpenNvml(library); }, dir_ + "/leases");
  }
};

TEST_F(JobPowerEnforcerTest, LimitsTheJobsGpusAndRestoresThemAtTheEnd) {
  JobPowerEnforcer enforcer = Enforcer();
  absl::StatusOr<std::string> started = enforcer.Start({"slurm-job-12", {1, 2}, 450000, true});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(*started, "power limit 450 W set on GPUs 1,2");
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 450000, 450000, 700000));
  absl::StatusOr<std::string> finished = enforcer.Finish("slurm-job-12");
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(*finished, "power limits restored: GPU 1 back to 700 W, GPU 2 back to 700 W");
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
}

TEST_F(JobPowerEnforcerTest, BoardsThatCannotDrawMoreThanCountedAreLeftAlone) {
  JobPowerEnforcer enforcer = Enforcer();
  absl::StatusOr<std::string> started = enforcer.Start({"slurm-job-3", {0, 1}, 962500, false});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_THAT(*started, HasSubstr("no power limit needed"));
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
  ASSERT_TRUE(enforcer.Finish("slurm-job-3").ok());
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
}

TEST_F(JobPowerEnforcerTest, AnUndeclaredDefaultBelowTheBoardsMaximumIsEnforcedToo) {
  ASSERT_TRUE(Enforcer().Start({"slurm-job-4", {3}, 600000, false}).ok());
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 600000));
}

TEST_F(JobPowerEnforcerTest, ADeclaredLimitThatCannotBeSetFailsAndChangesNothing) {
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 2");
  absl::StatusOr<std::string> refused = Enforcer().Start({"slurm-job-5", {1, 2}, 450000, true});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("cannot limit 450 W per GPU on GPUs 1,2: "));
  EXPECT_THAT(refused.status().message(), HasSubstr("Insufficient Permissions"));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
}

TEST_F(JobPowerEnforcerTest, BelowTheBoardsMinimumFails) {
  absl::StatusOr<std::string> refused = Enforcer().Start({"slurm-job-6", {0}, 100000, true});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(refused.status().message(), HasSubstr("100 W is outside the board's power limit range 200 W to 700 W"));
}

TEST_F(JobPowerEnforcerTest, WithoutNvmlOnlyAJobAtItsTypesDefaultRuns) {
  JobPowerEnforcer enforcer = Enforcer(dir_ + "/no-such-libnvidia-ml.so.1");
  absl::StatusOr<std::string> declared = enforcer.Start({"slurm-job-7", {0}, 450000, true});
  EXPECT_EQ(declared.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(declared.status().message(), HasSubstr("cannot limit 450 W per GPU on GPUs 0: cannot load NVML"));
  absl::StatusOr<std::string> undeclared = enforcer.Start({"slurm-job-8", {0}, 600000, false});
  ASSERT_TRUE(undeclared.ok()) << undeclared.status();
  EXPECT_THAT(*undeclared, HasSubstr("no power limit set (cannot load NVML"));
  absl::StatusOr<std::string> finished = enforcer.Finish("slurm-job-8");  // nothing held: NVML not needed
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(*finished, "no power limit to restore");
}

TEST_F(JobPowerEnforcerTest, AGpuHeldByAnotherJobFailsTheSecond) {
  JobPowerEnforcer enforcer = Enforcer();
  ASSERT_TRUE(enforcer.Start({"slurm-job-9", {0, 1}, 450000, true}).ok());
  absl::StatusOr<std::string> second = enforcer.Start({"slurm-job-10", {1}, 500000, true});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("GPU 1 is already limited to 450 W for slurm-job-9"));
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), SizeIs(2));
}

}  // namespace
}  // namespace rackwise::node_power
