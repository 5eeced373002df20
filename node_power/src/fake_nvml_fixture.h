// Test fixture: a private directory with a state file for the fake libnvidia-ml.so.1 (tests/fake_nvml), which
// the tests dlopen for real. Four GPUs: 200-700 W, default and current 700 W.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "node_power/nvml_library.h"

namespace rackwise::node_power {

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_node_power.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    state_ = dir_ + "/fake_nvml.state";
    log_ = state_ + ".log";
    WriteState(
        "gpu GPU-aaaa-0 200000 700000 700000 700000 91000\n"
        "gpu GPU-aaaa-1 200000 700000 700000 700000 92000\n"
        "gpu GPU-aaaa-2 200000 700000 700000 700000 93000\n"
        "gpu GPU-aaaa-3 200000 700000 700000 700000 94000\n");
    setenv("RACKWISE_FAKE_NVML_STATE", state_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("RACKWISE_FAKE_NVML_STATE");
    std::filesystem::remove_all(dir_);
  }

  void WriteState(const std::string& text) { std::ofstream(state_, std::ios::trunc) << text; }
  void AppendState(const std::string& line) { std::ofstream(state_, std::ios::app) << line << "\n"; }
  // Drops the "fail" lines, keeping the GPUs as they are now.
  void ClearFailures() {
    std::string kept;
    for (const std::string& line : Lines(state_)) {
      if (!absl::StartsWith(line, "fail ")) kept += line + "\n";
    }
    WriteState(kept);
  }
  std::string ReadFile(const std::string& path) const {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::vector<std::string> Lines(const std::string& path) const {
    return absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
  }
  // Log lines of calls to `function` (without the pid), e.g. "nvmlDeviceSetPowerManagementLimit gpu=1 limit=450000 ->
  // 0".
  std::vector<std::string> Calls(const std::string& function) const {
    std::vector<std::string> calls;
    for (const std::string& line : Lines(log_)) {
      std::string call = line.substr(line.find(' ') + 1);
      if (absl::StartsWith(call, function + " ")) calls.push_back(call);
    }
    return calls;
  }
  std::unique_ptr<GpuPowerControl> Open() {
    absl::StatusOr<std::unique_ptr<GpuPowerControl>> nvml = OpenNvml(RACKWISE_FAKE_NVML);
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    return nvml.ok() ? *std::move(nvml) : nullptr;
  }
  int64_t CurrentMw(int gpu) {
    absl::StatusOr<GpuPowerLimits> limits = Open()->Limits(gpu);
    EXPECT_TRUE(limits.ok()) << limits.status();
    return limits.ok() ? limits->current_mw : -1;
  }
  std::vector<int64_t> CurrentLimits() {
    std::vector<int64_t> limits;
    for (int gpu = 0; gpu < 4; ++gpu) limits.push_back(CurrentMw(gpu));
    return limits;
  }

  std::string dir_, state_, log_;
};

}  // namespace rackwise::node_power
