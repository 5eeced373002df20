// PowerLimitLeases against the fake NVML (dlopen'ed) and its state file.
#include "node_power/power_limit_leases.h"

#include <sys/wait.h>

#include "fake_nvml_fixture.h"
#include "gmock/gmock.h"
#include "lease_file.h"

namespace rackwise::node_power {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class PowerLimitLeasesTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    nvml_ = Open();
    ASSERT_NE(nvml_, nullptr);
    leases_file_ = dir_ + "/leases";
  }
  std::vector<PowerLimitLease> Leases() {
    absl::StatusOr<std::vector<PowerLimitLease>> leases = ReadLeaseFile(leases_file_);
    EXPECT_TRUE(leases.ok()) << leases.status();
    return leases.ok() ? *leases : std::vector<PowerLimitLease>{};
  }

  std::unique_ptr<GpuPowerControl> nvml_;
  std::string leases_file_;
};

// Checks, at every SetLimit, that the state file already records the previous limit of the GPU being
// changed: what a crash right after the change would need to restore it.
class RecordFirstChecker final : public GpuPowerControl {
 public:
  RecordFirstChecker(GpuPowerControl* inner, std::string leases_file) : inner_(inner), file_(std::move(leases_file)) {}
  absl::StatusOr<int> DeviceCount() override { return inner_->DeviceCount(); }
  absl::StatusOr<int> IndexOfUuid(std::string_view uuid) override { return inner_->IndexOfUuid(uuid); }
  absl::StatusOr<GpuPowerLimits> Limits(int index) override { return inner_->Limits(index); }
  absl::StatusOr<int64_t> PowerUsage(int index) override { return inner_->PowerUsage(index); }
  absl::Status SetLimit(int index, int64_t limit_mw) override {
    absl::StatusOr<GpuPowerLimits> before = inner_->Limits(index);
    absl::StatusOr<std::vector<PowerLimitLease>> leases = ReadLeaseFile(file_);
    bool recorded = false;
    for (const PowerLimitLease& lease : leases.value_or(std::vector<PowerLimitLease>{})) {
      recorded |= lease.gpu == index && before.ok() &&
                  (lease.previous_mw == before->current_mw || lease.previous_mw == limit_mw);
    }
    EXPECT_TRUE(recorded) << "GPU " << index << " changed before its previous limit was recorded";
    ++sets;
    return inner_->SetLimit(index, limit_mw);
  }
  int sets = 0;

 private:
  GpuPowerControl* inner_;
  std::string file_;
};

TEST_F(PowerLimitLeasesTest, AcquireLimitsExactlyTheGivenGpusAndReleaseRestoresThem) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  ASSERT_TRUE(leases.Acquire("job42", {1, 3}, 450000).ok());
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 450000, 700000, 450000));
  EXPECT_THAT(Leases(),
              ElementsAre(PowerLimitLease{1, "job42", 450000, 700000}, PowerLimitLease{3, "job42", 450000, 700000}));
  absl::StatusOr<std::vector<ReleasedLease>> released = leases.Release("job42");
  ASSERT_TRUE(released.ok()) << released.status();
  ASSERT_THAT(*released, SizeIs(2));
  EXPECT_TRUE((*released)[0].restored);
  EXPECT_EQ((*released)[0].found_mw, 450000);
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_THAT(Leases(), IsEmpty());
}

TEST_F(PowerLimitLeasesTest, RecordsThePreviousLimitBeforeChangingAGpu) {
  RecordFirstChecker checker(nvml_.get(), leases_file_);
  PowerLimitLeases leases(&checker, leases_file_);
  ASSERT_TRUE(leases.Acquire("job1", {0, 2}, 300000).ok());
  ASSERT_TRUE(leases.Release("job1").ok());
  EXPECT_EQ(checker.sets, 4);
}

TEST_F(PowerLimitLeasesTest, AcquireAndReleaseTwiceChangeNothingTheSecondTime) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  ASSERT_TRUE(leases.Acquire("job7", {0, 1}, 500000).ok());
  ASSERT_TRUE(leases.Acquire("job7", {0, 1}, 500000).ok());
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), SizeIs(2));
  EXPECT_THAT(Leases(),
              ElementsAre(PowerLimitLease{0, "job7", 500000, 700000}, PowerLimitLease{1, "job7", 500000, 700000}));
  ASSERT_TRUE(leases.Release("job7").ok());
  absl::StatusOr<std::vector<ReleasedLease>> again = leases.Release("job7");
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, IsEmpty());
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), SizeIs(4));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
}

TEST_F(PowerLimitLeasesTest, OneGpuRefusingSetsTheOthersBackAndNamesIt) {
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 2");
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  absl::Status refused = leases.Acquire("job9", {0, 1, 2, 3}, 400000);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.message(), HasSubstr("(GPU 2, 400000 mW): Insufficient Permissions"));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit gpu=3"), IsEmpty());  // stopped at the first refusal
  EXPECT_THAT(Leases(), IsEmpty());
}

TEST_F(PowerLimitLeasesTest, ALimitOutsideTheBoardsRangeChangesNothing) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  absl::Status low = leases.Acquire("job3", {0, 1}, 150000);
  EXPECT_EQ(low.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(low.message(), HasSubstr("GPU 0: 150 W is outside the board's power limit range 200 W to 700 W"));
  EXPECT_EQ(leases.Acquire("job3", {0, 1}, 700001).code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
  EXPECT_THAT(Leases(), IsEmpty());
}

TEST_F(PowerLimitLeasesTest, LeasesSurviveARestartAndAnotherOwnerIsRefused) {
  {
    PowerLimitLeases leases(nvml_.get(), leases_file_);
    ASSERT_TRUE(leases.Acquire("job5", {2}, 350000).ok());
  }
  nvml_.reset();
  std::unique_ptr<GpuPowerControl> reopened = Open();
  PowerLimitLeases leases(reopened.get(), leases_file_);
  absl::Status taken = leases.Acquire("job6", {1, 2}, 300000);
  EXPECT_EQ(taken.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(taken.message(), HasSubstr("GPU 2 is already limited to 350 W for job5"));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 350000, 700000));
  ASSERT_TRUE(leases.Release("job5").ok());
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_TRUE(leases.Acquire("job6", {1, 2}, 300000).ok());
}

TEST_F(PowerLimitLeasesTest, NeverRestoresOverALimitSomeoneElseSet) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  ASSERT_TRUE(leases.Acquire("job8", {0, 1}, 450000).ok());
  ASSERT_TRUE(nvml_->SetLimit(0, 600000).ok());  // an administrator, after the job started
  absl::StatusOr<std::vector<ReleasedLease>> released = leases.Release("job8");
  ASSERT_TRUE(released.ok()) << released.status();
  ASSERT_THAT(*released, SizeIs(2));
  EXPECT_FALSE((*released)[0].restored);
  EXPECT_EQ((*released)[0].found_mw, 600000);
  EXPECT_TRUE((*released)[1].restored);
  EXPECT_THAT(CurrentLimits(), ElementsAre(600000, 700000, 700000, 700000));
}

TEST_F(PowerLimitLeasesTest, AFailedRestoreKeepsTheLeaseForALaterRelease) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  ASSERT_TRUE(leases.Acquire("job2", {0, 3}, 250000).ok());
  AppendState("fail nvmlDeviceSetPowerManagementLimit 15 3");
  absl::StatusOr<std::vector<ReleasedLease>> failed = leases.Release("job2");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), HasSubstr("GPU 3 not restored to 700 W"));
  EXPECT_THAT(Leases(), ElementsAre(PowerLimitLease{3, "job2", 250000, 700000}));
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 250000));
  ClearFailures();
  ASSERT_TRUE(leases.Release("job2").ok());
  EXPECT_THAT(CurrentLimits(), ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_THAT(Leases(), IsEmpty());
}

TEST_F(PowerLimitLeasesTest, AMissingStateDirectoryHoldsNothingUntilTheFirstAcquireCreatesItWithItsParents) {
  PowerLimitLeases leases(nvml_.get(), dir_ + "/state/leases");
  absl::StatusOr<std::vector<ReleasedLease>> released = leases.Release("job1");  // an epilog on a fresh node
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_THAT(*released, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state"));
  ASSERT_TRUE(leases.Acquire("job1", {0}, 300000).ok());
  EXPECT_THAT(*leases.List(), SizeIs(1));
  EXPECT_TRUE(PowerLimitLeases(nvml_.get(), dir_ + "/no/such/leases").Acquire("job2", {1}, 300000).ok());
  EXPECT_TRUE(std::filesystem::is_regular_file(dir_ + "/no/such/leases"));
}

TEST_F(PowerLimitLeasesTest, BadRequestsAreRefusedBeforeAnyChange) {
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  EXPECT_EQ(leases.Acquire("", {0}, 300000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(leases.Acquire("job 1", {0}, 300000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(leases.Acquire("job1", {}, 300000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(leases.Acquire("job1", {1, 1}, 300000).code(), absl::StatusCode::kInvalidArgument);
  absl::Status missing = leases.Acquire("job1", {0, 4}, 300000);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("GPU 4 does not exist (this machine has 4 GPUs)"));
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
}

// slurmd runs each job's prolog in a process of its own: concurrent Acquires must all be recorded.
TEST_F(PowerLimitLeasesTest, ConcurrentProcessesEachKeepTheirLease) {
  std::vector<pid_t> children;
  for (int gpu = 0; gpu < 4; ++gpu) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::unique_ptr<GpuPowerControl> nvml = Open();
      bool ok = nvml != nullptr && PowerLimitLeases(nvml.get(), leases_file_)
                                       .Acquire("job" + std::to_string(gpu), {gpu}, 300000 + gpu * 1000)
                                       .ok();
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_THAT(Leases(), SizeIs(4));
  EXPECT_THAT(CurrentLimits(), ElementsAre(300000, 301000, 302000, 303000));
}

TEST_F(PowerLimitLeasesTest, ACorruptStateFileIsAnErrorNamingTheLine) {
  std::ofstream(leases_file_) << "# header\n0 job1 450000 700000\n1 job1 lots 700000\n";
  PowerLimitLeases leases(nvml_.get(), leases_file_);
  absl::Status corrupt = leases.Acquire("job2", {2}, 300000);
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.message(), HasSubstr(leases_file_ + ":3:"));
  EXPECT_EQ(leases.Release("job1").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), IsEmpty());
}

}  // namespace
}  // namespace rackwise::node_power
