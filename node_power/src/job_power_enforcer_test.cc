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

// The scheduler hands a GPU on only after its previous job's end on the machine: a lease of another owner on it
// is one whose end never gave it back (here: an epilog that never ran).
TEST_F(JobPowerEnforcerTest, AGpuStillLeasedToAnEarlierJobIsGivenBackBeforeTheNextOneRuns) {
  JobPowerEnforcer enforcer = Enforcer();
  ASSERT_TRUE(enforcer.Start({"slurm-job-9", {0, 1}, 450000, true}).ok());
  absl::StatusOr<std::string> second = enforcer.Start({"slurm-job-10", {1}, 500000, true});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second,
            "limits of finished jobs given back: slurm-job-9's GPU 0 back to 700 W, GPU 1 back to 700 W; "
            "power limit 500 W set on GPUs 1");
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 500000, 700000, 700000));
}

// A stale lease: job 20's limits on GPUs 1 and 2 that its end could not give back (the board refused).
class StaleLeaseTest : public JobPowerEnforcerTest {
 protected:
  void SetUp() override {
    JobPowerEnforcerTest::SetUp();
    ASSERT_TRUE(Enforcer().Start({"slurm-job-20", {1, 2}, 450000, true}).ok());
    AppendState("fail nvmlDeviceSetPowerManagementLimit 4");
    ASSERT_FALSE(Enforcer().Finish("slurm-job-20").ok());
    ASSERT_THAT(CurrentLimits(), ElementsAre(700000, 450000, 450000, 700000));
  }
};

TEST_F(StaleLeaseTest, TheNextJobOnTheGpuGivesItBackFirstThenRuns) {
  ClearFailures();
  // Undeclared and counted above the boards' maximum: no limit of its own, but the stale one still goes.
  absl::StatusOr<std::string> started = Enforcer().Start({"slurm-job-21", {2, 3}, 962500, false});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_THAT(*started, HasSubstr("limits of finished jobs given back: slurm-job-20's GPU 1 back to 700 W, GPU 2 "
                                  "back to 700 W; no power limit needed"));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_THAT(Lines(dir_ + "/leases"), SizeIs(1));  // the header comment only
}

TEST_F(StaleLeaseTest, ADeclaredJobGetsItsOwnLimitAfterTheGiveBack) {
  ClearFailures();
  absl::StatusOr<std::string> started = Enforcer().Start({"slurm-job-22", {1}, 500000, true});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_THAT(*started, HasSubstr("power limit 500 W set on GPUs 1"));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 500000, 700000, 700000));
}

TEST_F(StaleLeaseTest, AGiveBackThatFailsRefusesTheJob) {
  for (const JobGpuPower& job :
       {JobGpuPower{"slurm-job-23", {2}, 962500, false}, JobGpuPower{"slurm-job-24", {2}, std::nullopt, false}}) {
    absl::StatusOr<std::string> refused = Enforcer().Start(job);
    ASSERT_FALSE(refused.ok()) << job.owner;
    EXPECT_THAT(refused.status().message(),
                HasSubstr("GPUs 2 still limited for finished slurm-job-20 cannot be restored: GPU 1 not restored"));
    EXPECT_THAT(refused.status().message(), HasSubstr("Insufficient Permissions"));
  }
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 450000, 450000, 700000));
}

TEST_F(StaleLeaseTest, WithoutNvmlAJobOnAStaleGpuIsRefusedAndOneBesideItRuns) {
  JobPowerEnforcer enforcer = Enforcer(dir_ + "/no-such-libnvidia-ml.so.1");
  absl::StatusOr<std::string> refused = enforcer.Start({"slurm-job-25", {1}, 962500, false});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("GPUs 1 still limited for finished slurm-job-20 cannot be "
                                                    "restored: cannot load NVML"));
  EXPECT_TRUE(enforcer.Start({"slurm-job-26", {0}, 962500, false}).ok());
}

TEST_F(JobPowerEnforcerTest, WattsNotKnownHereSetNoLimit) {
  absl::StatusOr<std::string> started = Enforcer().Start({"slurm-job-27", {0}, std::nullopt, false});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(*started, kNoLimitSet);
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
}

TEST_F(JobPowerEnforcerTest, TheStateDirectoryIsCreatedWithItsParents) {
  JobPowerEnforcer enforcer([] { return OpenNvml(RACKWISE_FAKE_NVML); }, dir_ + "/a/b/c/leases");
  ASSERT_TRUE(enforcer.Start({"slurm-job-28", {0}, 450000, true}).ok());
  EXPECT_TRUE(std::filesystem::is_regular_file(dir_ + "/a/b/c/leases"));
  EXPECT_EQ(std::filesystem::status(dir_ + "/a/b").permissions(), std::filesystem::perms(0755));
}

}  // namespace
}  // namespace rackwise::node_power
