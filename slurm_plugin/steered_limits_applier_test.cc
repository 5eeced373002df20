// SPDX-License-Identifier: GPL-2.0-or-later
// The node side of steering against the fake NVML (dlopened for real): a listed job's GPUs go to its limit and
// back to its declared watts when its line disappears, under its own lease (the epilog still restores the limit
// from before the job); a job without a lease here is never touched; a limit the board refuses is a drain cause,
// given once; a limit changed behind its back is set again.
#include "steered_limits_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_nvml_fixture.h"
#include "job_power.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class SteeredLimitsApplierTest : public node_power::FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    control_ = Open();
    ASSERT_NE(control_, nullptr);
    leases_ = dir_ + "/gpu-power-limits";
  }
  // What a job's prolog does: its GPUs held to its declared watts under its lease.
  void Prolog(uint32_t job, const std::vector<int>& gpus, int64_t mw) {
    ASSERT_TRUE(
        node_power::PowerLimitLeases(control_.get(), leases_).Acquire(LeaseOwner(std::to_string(job)), gpus, mw).ok());
  }
  void Epilog(uint32_t job) {
    ASSERT_TRUE(node_power::PowerLimitLeases(control_.get(), leases_).Release(LeaseOwner(std::to_string(job))).ok());
  }
  SteeredLimitsApplier::Round Apply(const std::vector<SteeredLimit>& limits) {
    return applier_.Apply(limits, *control_, leases_);
  }

  std::unique_ptr<node_power::GpuPowerControl> control_;
  std::string leases_;
  SteeredLimitsApplier applier_{"n1"};
};

TEST_F(SteeredLimitsApplierTest, LowersThenRestoresThenTheEpilogGivesBack) {
  Prolog(5, {1, 2}, 600'000);
  const SteeredLimit line{5, 450'000, 600'000, 3, {{"n0", {0}}, {"n1", {1, 2}}}};
  SteeredLimitsApplier::Round round = Apply({line});
  EXPECT_THAT(CurrentLimits(), ElementsAre(700'000, 450'000, 450'000, 700'000));
  ASSERT_EQ(round.log.size(), 1u);
  EXPECT_THAT(round.log[0], HasSubstr("job 5 (generation 3): GPUs 1,2 to 450.000 W per GPU (declared 600.000 W)"));
  EXPECT_THAT(applier_.Metrics(),
              HasSubstr("rackwise_slurm_gpu_steered_limit_watts{node=\"n1\",job=\"5\",gpu=\"1\"} 450.000\n"));
  EXPECT_THAT(Apply({line}).log, IsEmpty());                                    // nothing to change
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"), testing::SizeIs(4));  // 2 prolog + 2 steering
  round = Apply({});  // the line disappeared: back to the declared watts
  EXPECT_THAT(CurrentLimits(), ElementsAre(700'000, 600'000, 600'000, 700'000));
  EXPECT_EQ(round.log.size(), 1u);
  Epilog(5);  // the epilog still gives back what was in force before the job
  EXPECT_THAT(CurrentLimits(), ElementsAre(700'000, 700'000, 700'000, 700'000));
  EXPECT_THAT(Apply({}).log, IsEmpty());
  EXPECT_THAT(applier_.Metrics(), testing::Not(HasSubstr("job=\"5\"")));
}

TEST_F(SteeredLimitsApplierTest, NeverTouchesAJobWithoutALeaseHere) {
  const SteeredLimit line{6, 450'000, 600'000, 1, {{"n1", {0}}}};
  SteeredLimitsApplier::Round round = Apply({line});  // before its prolog (or after its epilog)
  EXPECT_THAT(CurrentLimits(), ElementsAre(700'000, 700'000, 700'000, 700'000));
  ASSERT_EQ(round.log.size(), 1u);
  EXPECT_THAT(round.log[0], HasSubstr("job 6: listed, but no GPU of it holds a rackwise limit on this node"));
  EXPECT_THAT(Apply({line}).log, IsEmpty());  // said once
  Prolog(6, {0}, 600'000);
  Apply({line});
  EXPECT_EQ(CurrentMw(0), 450'000);
}

TEST_F(SteeredLimitsApplierTest, ARefusedLimitIsADrainCauseOnceAndABoardMaximumCaps) {
  Prolog(7, {3}, 600'000);
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 3");
  const SteeredLimit line{7, 450'000, 600'000, 2, {{"n1", {3}}}};
  SteeredLimitsApplier::Round round = Apply({line});
  ASSERT_EQ(round.drains.size(), 1u);
  EXPECT_THAT(round.drains[0], HasSubstr("job 7: cannot apply the steered limit 450.000 W per GPU on GPU 3: "));
  EXPECT_THAT(Apply({line}).drains, IsEmpty());  // one drain per job and limit
  EXPECT_THAT(applier_.Metrics(), HasSubstr("rackwise_slurm_gpu_steered_limit_failures_total 2\n"));
  ClearFailures();
  Apply({line});
  EXPECT_EQ(CurrentMw(3), 450'000);
  // Someone sets it back up behind steering's back: the next round holds it again.
  ASSERT_TRUE(control_->SetLimit(3, 600'000).ok());
  Apply({line});
  EXPECT_EQ(CurrentMw(3), 450'000);
  // A declared limit above the board's maximum goes back to the maximum.
  const SteeredLimit high{7, 650'000, 962'500, 3, {{"n1", {3}}}};
  Apply({high});
  EXPECT_EQ(CurrentMw(3), 650'000);
  Apply({});
  EXPECT_EQ(CurrentMw(3), 700'000);
}

}  // namespace
}  // namespace rackwise::slurm
