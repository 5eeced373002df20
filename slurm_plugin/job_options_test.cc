// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for the per-job option parsing shared by the SPANK plugin and the select plugin.
#include "job_options.h"

#include <gtest/gtest.h>

#include "rackwise/testing/watts_texts.h"

namespace rackwise::slurm {
namespace {

TEST(ParseNvlink, AcceptsTheThreeValuesInAnyCase) {
  EXPECT_EQ(*ParseNvlink("required"), Locality::kRequired);
  EXPECT_EQ(*ParseNvlink("Preferred"), Locality::kPreferred);
  EXPECT_EQ(*ParseNvlink(" NONE "), Locality::kNone);
}

TEST(ParseNvlink, RejectsAnythingElseNamingTheOption) {
  for (const char* bad : {"", "yes", "require", "1", "required,none"}) {
    absl::StatusOr<Locality> got = ParseNvlink(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("--nvlink"), std::string_view::npos);
  }
}

TEST(ParseGpuWatts, AcceptsPositiveWattsWithinBound) {
  EXPECT_DOUBLE_EQ(*ParseGpuWatts("700"), 700);
  EXPECT_DOUBLE_EQ(*ParseGpuWatts("450.5"), 450.5);
  EXPECT_DOUBLE_EQ(*ParseGpuWatts("10000"), 10000);  // kMaxWattsPerGpu, the core's bound
}

TEST(ParseGpuWatts, RejectsNonsense) {
  for (const char* bad : {"", "0", "-5", "abc", "700W", "nan", "inf", "1e9", "100001"}) {
    absl::StatusOr<double> got = ParseGpuWatts(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("--gpu-watts"), std::string_view::npos) << bad;
  }
}

// --gpu-watts goes through the core's bounds (rackwise/power_bounds.h), as the pod annotation does: extreme,
// tiny and malformed values are refused naming the option; what passes is sane, never a free job.
TEST(ParseGpuWatts, ExtremesAreRefusedBothAtSubmitAndInSlurmctld) {
  for (const char* text : ::rackwise::testing::kWattsTexts) {
    absl::StatusOr<double> watts = ParseGpuWatts(text);
    const std::string entry = std::string("RACKWISE_GPU_WATTS=") + text;
    absl::StatusOr<JobOptions> env = ParseJobEnv({entry});
    ASSERT_EQ(watts.ok(), env.ok()) << text;
    if (!watts.ok()) {
      EXPECT_NE(watts.status().message().find("--gpu-watts"), std::string_view::npos) << text;
      continue;
    }
    EXPECT_GE(*watts, kMinWattsPerGpu) << text;
    EXPECT_LE(*watts, kMaxWattsPerGpu) << text;
    EXPECT_EQ(env->watts_per_gpu, *watts) << text;
  }
}

TEST(ParseJobEnv, ReadsKnownNamesAndIgnoresOthers) {
  absl::StatusOr<JobOptions> got =
      ParseJobEnv({"FOO=bar", "RACKWISE_NVLINK=required", "RACKWISE_GPU_WATTS=650", "NOEQUALS"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->locality, Locality::kRequired);
  EXPECT_DOUBLE_EQ(got->watts_per_gpu, 650);
}

TEST(ParseJobEnv, EmptyMeansDefaults) {
  absl::StatusOr<JobOptions> got = ParseJobEnv({});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->locality.has_value());
  EXPECT_EQ(got->watts_per_gpu, 0);
}

TEST(ParseJobEnv, MalformedKnownValueIsAnError) {
  EXPECT_FALSE(ParseJobEnv({"RACKWISE_NVLINK=maybe"}).ok());
  EXPECT_FALSE(ParseJobEnv({"RACKWISE_GPU_WATTS=-1"}).ok());
}

TEST(LocalityName, RoundTrips) {
  for (Locality l : {Locality::kRequired, Locality::kPreferred, Locality::kNone}) {
    EXPECT_EQ(*ParseNvlink(LocalityName(l)), l);
  }
}

}  // namespace
}  // namespace rackwise::slurm
