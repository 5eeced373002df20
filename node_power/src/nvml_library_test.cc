// OpenNvml and the NVML-backed GpuPowerControl, against the fake libnvidia-ml.so.1 loaded with dlopen.
#include "node_power/nvml_library.h"

#include "fake_nvml_fixture.h"
#include "gmock/gmock.h"

namespace rackwise::node_power {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using NvmlLibraryTest = FakeNvmlTest;

TEST_F(NvmlLibraryTest, MissingLibraryIsUnavailableAndNamesThePath) {
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml(dir_ + "/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(nvml.status().message(), HasSubstr(dir_ + "/libnvidia-ml.so.1"));
}

TEST_F(NvmlLibraryTest, InitFailureCarriesNvmlsWords) {
  AppendState("fail nvmlInit_v2 9");
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml(RACKWISE_FAKE_NVML);
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(nvml.status().message(), HasSubstr("nvmlInit_v2(): Driver Not Loaded (NVML error 9)"));
}

TEST_F(NvmlLibraryTest, ReadsCountLimitsUsageAndUuids) {
  std::unique_ptr<GpuPowerControl> nvml = Open();
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(*nvml->DeviceCount(), 4);
  absl::StatusOr<GpuPowerLimits> limits = nvml->Limits(2);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->min_mw, 200000);
  EXPECT_EQ(limits->max_mw, 700000);
  EXPECT_EQ(limits->default_mw, 700000);
  EXPECT_EQ(limits->current_mw, 700000);
  EXPECT_EQ(*nvml->PowerUsage(3), 94000);
  EXPECT_EQ(*nvml->IndexOfUuid("GPU-aaaa-2"), 2);
  absl::StatusOr<int> unknown = nvml->IndexOfUuid("GPU-nope");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("nvmlDeviceGetHandleByUUID(GPU-nope): Not Found"));
  EXPECT_EQ(nvml->Limits(4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nvml->Limits(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(NvmlLibraryTest, SetLimitReachesTheBoardAndOtherProcessesSeeIt) {
  ASSERT_TRUE(Open()->SetLimit(1, 450000).ok());
  EXPECT_EQ(CurrentMw(1), 450000);  // a fresh NVML session reads what the last one set
  EXPECT_EQ(CurrentMw(0), 700000);
  EXPECT_THAT(Calls("nvmlDeviceSetPowerManagementLimit"),
              ElementsAre("nvmlDeviceSetPowerManagementLimit gpu=1 limit=450000 -> 0"));
}

TEST_F(NvmlLibraryTest, SetLimitErrorNamesCallGpuAndNvmlsWords) {
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 1");
  std::unique_ptr<GpuPowerControl> nvml = Open();
  absl::Status denied = nvml->SetLimit(1, 450000);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(
      denied.message(),
      HasSubstr("nvmlDeviceSetPowerManagementLimit(GPU 1, 450000 mW): Insufficient Permissions (NVML error 4)"));
  EXPECT_TRUE(nvml->SetLimit(0, 450000).ok());  // the failure was injected for GPU 1 only
  EXPECT_EQ(nvml->SetLimit(0, -5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nvml->SetLimit(0, int64_t{1} << 40).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(NvmlLibraryTest, LibraryWithoutThePowerLimitFunctionsIsUnavailableAndNamesThem) {
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml("libc.so.6");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(nvml.status().message(),
              HasSubstr("libc.so.6: NVML library lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, "
                        "nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPowerManagementLimitConstraints, "
                        "nvmlDeviceGetPowerManagementLimit, nvmlDeviceSetPowerManagementLimit"));
}

// An NVML with only what power limits need, under NVML's first names (tests/fake_nvml, FAKE_NVML_MINIMAL): the
// limits work; what it lacks is said where it is needed.
TEST_F(NvmlLibraryTest, MinimalNvmlReadsAndSetsLimitsAndNamesWhatItLacks) {
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml(RACKWISE_FAKE_NVML_MINIMAL);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_THAT(Calls("nvmlInit"), ElementsAre("nvmlInit -> 0"));  // found under its first name
  EXPECT_EQ(*(*nvml)->DeviceCount(), 4);
  absl::StatusOr<GpuPowerLimits> limits = (*nvml)->Limits(2);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->min_mw, 200000);
  EXPECT_EQ(limits->max_mw, 700000);
  EXPECT_EQ(limits->default_mw, 0);  // the driver cannot say
  EXPECT_EQ(limits->current_mw, 700000);
  ASSERT_TRUE((*nvml)->SetLimit(1, 450000).ok());
  EXPECT_EQ(CurrentMw(1), 450000);
  absl::StatusOr<int64_t> usage = (*nvml)->PowerUsage(0);
  EXPECT_EQ(usage.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(usage.status().message(), HasSubstr("lacks nvmlDeviceGetPowerUsage"));
  absl::StatusOr<int> index = (*nvml)->IndexOfUuid("GPU-aaaa-2");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(index.status().message(), HasSubstr("lacks nvmlDeviceGetHandleByUUID"));
}

TEST_F(NvmlLibraryTest, MinimalNvmlErrorsCarryTheCallAndTheCodesWords) {
  AppendState("fail nvmlDeviceSetPowerManagementLimit 4 1");
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml(RACKWISE_FAKE_NVML_MINIMAL);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  absl::Status denied = (*nvml)->SetLimit(1, 450000);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(
      denied.message(),
      HasSubstr("nvmlDeviceSetPowerManagementLimit(GPU 1, 450000 mW): Insufficient Permissions (NVML error 4)"));
  EXPECT_THAT((*nvml)->Limits(9).status().message(), HasSubstr("nvmlDeviceGetHandleByIndex(GPU 9)"));
  nvml->reset();
  AppendState("fail nvmlInit 9");
  absl::StatusOr<std::unique_ptr<GpuPowerControl>> down = OpenNvml(RACKWISE_FAKE_NVML_MINIMAL);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(down.status().message(), HasSubstr("nvmlInit(): Driver Not Loaded (NVML error 9)"));
}

}  // namespace
}  // namespace rackwise::node_power
