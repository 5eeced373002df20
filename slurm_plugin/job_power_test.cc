// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for the job prolog's view of a job's GPU power: counted watts, GPU indices, settings and defaults.
#include "job_power.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "rackwise/cluster_description.h"

namespace rackwise::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// hgx: (10200 - 2500) / 8 = 962.5 W per GPU by default.
Topology Hgx() {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(
      "cluster: t\n"
      "node_types:\n"
      "  - {name: hgx, gpus: 8, nvlink: node, gpu_watts: 700, node_watts: 10200, idle_watts: 2500}\n"
      "racks:\n"
      "  - {name: r1, type: hgx, nodes: 'g[1-2]', power_cap_kw: 41}\n",
      "t.yaml", &diagnostics);
  EXPECT_TRUE(d.ok()) << d.status();
  return *Topology::Build(*d);
}

TEST(JobGpuPowerOn, DeclaredWattsAreCountedAndMarkedDeclared) {
  absl::StatusOr<std::optional<node_power::JobGpuPower>> p = JobGpuPowerOn(Hgx(), {"41", "g2", "1,5", "450", ""});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->owner, "slurm-job-41");
  EXPECT_THAT((*p)->gpus, ElementsAre(1, 5));
  EXPECT_EQ((*p)->counted_mw, 450000);
  EXPECT_TRUE((*p)->declared);
}

TEST(JobGpuPowerOn, UndeclaredOrDefaultWattsCountTheTypeDefault) {
  for (const char* watts : {"", "962.5"}) {
    absl::StatusOr<std::optional<node_power::JobGpuPower>> p = JobGpuPowerOn(Hgx(), {"7", "g1", "0", watts, ""});
    ASSERT_TRUE(p.ok() && p->has_value()) << watts;
    EXPECT_EQ((*p)->counted_mw, 962500);
    EXPECT_FALSE((*p)->declared) << watts;
  }
}

TEST(JobGpuPowerOn, NothingToDoWithoutGpusOrForAnUndescribedNode) {
  EXPECT_FALSE(JobGpuPowerOn(Hgx(), {"7", "g1", "", "450", ""})->has_value());
  EXPECT_FALSE(JobGpuPowerOn(Hgx(), {"7", "login1", "0", "450", ""})->has_value());
}

TEST(JobGpuPowerOn, MalformedValuesAreErrors) {
  absl::StatusOr<std::optional<node_power::JobGpuPower>> p = JobGpuPowerOn(Hgx(), {"7", "g1", "0,8", "", ""});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("'8' is not a GPU of g1 (8 GPUs)"));
  EXPECT_FALSE(JobGpuPowerOn(Hgx(), {"7", "g1", "0,x", "", ""}).ok());
  EXPECT_FALSE(JobGpuPowerOn(Hgx(), {"7", "g1", "0", "-3", ""}).ok());
  EXPECT_FALSE(JobGpuPowerOn(Hgx(), {"", "g1", "0", "", ""}).ok());
}

TEST(SettingsFor, DefaultsAndNodeNames) {
  EnforcementSettings defaults = SettingsFor(v1::PowerEnforcement(), "g1");
  EXPECT_TRUE(defaults.enabled);
  EXPECT_EQ(defaults.nvml_library, "libnvidia-ml.so.1");
  EXPECT_EQ(defaults.state_file, "/var/lib/rackwise/gpu-power-limits");
  v1::PowerEnforcement e;
  e.set_mode(v1::POWER_LIMIT_MODE_DISABLED);
  e.set_nvml_library("/opt/%n/libnvidia-ml.so.1");
  e.set_state_dir("/run/rackwise/%n");
  EnforcementSettings set = SettingsFor(e, "g2");
  EXPECT_FALSE(set.enabled);
  EXPECT_EQ(set.nvml_library, "/opt/g2/libnvidia-ml.so.1");
  EXPECT_EQ(set.state_dir, "/run/rackwise/g2");
  EXPECT_EQ(set.state_file, "/run/rackwise/g2/gpu-power-limits");
}

TEST(DescriptionPathBeside, SlurmConf) {
  EXPECT_EQ(DescriptionPathBeside("/etc/slurm/slurm.conf"), "/etc/slurm/rackwise.yaml");
  EXPECT_EQ(DescriptionPathBeside(""), "/etc/slurm/rackwise.yaml");
}

TEST(JobGpuPowerCarried, OnlyWhatTheJobDeclared) {
  absl::StatusOr<std::optional<node_power::JobGpuPower>> declared = JobGpuPowerCarried({"9", "g1", "3,12", "450", ""});
  ASSERT_TRUE(declared.ok() && declared->has_value());
  EXPECT_THAT((*declared)->gpus, ElementsAre(3, 12));
  EXPECT_EQ((*declared)->counted_mw, 450000);
  EXPECT_TRUE((*declared)->declared);
  absl::StatusOr<std::optional<node_power::JobGpuPower>> undeclared = JobGpuPowerCarried({"9", "g1", "0", "", ""});
  ASSERT_TRUE(undeclared.ok() && undeclared->has_value());
  EXPECT_EQ((*undeclared)->counted_mw, std::nullopt);
  EXPECT_FALSE((*undeclared)->declared);
}

// Four GPUs of 200-700 W in memory, shared by every "NVML" a prolog or epilog opens (node_power's tests run
// the same enforcement against the fake NVML library).
struct Boards {
  std::vector<int64_t> current_mw = std::vector<int64_t>(4, 700000);
  bool refuse = false;  // SetLimit fails, as NVML without permission
};
class MemoryGpus : public node_power::GpuPowerControl {
 public:
  explicit MemoryGpus(Boards* boards) : boards_(boards) {}
  absl::StatusOr<int> DeviceCount() override { return 4; }
  absl::StatusOr<int> IndexOfUuid(std::string_view) override { return absl::NotFoundError("no UUIDs here"); }
  absl::StatusOr<node_power::GpuPowerLimits> Limits(int index) override {
    return node_power::GpuPowerLimits{200000, 700000, 700000, boards_->current_mw.at(index)};
  }
  absl::Status SetLimit(int index, int64_t limit_mw) override {
    if (boards_->refuse) return absl::PermissionDeniedError("Insufficient Permissions");
    boards_->current_mw.at(index) = limit_mw;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> PowerUsage(int) override { return 0; }

 private:
  Boards* boards_;
};

// slurm.conf's directory with a rackwise.yaml whose state_dir has missing parents; the node cache beside it.
// g1's type counts (3000 - 500) / 4 = 625 W per GPU, below the boards' 700 W: undeclared jobs are limited.
class JobScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_job_script.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::filesystem::create_directory(dir_ + "/etc");
    good_ =
        "cluster: t\n"
        "node_types:\n"
        "  - {name: small, gpus: 4, nvlink: node, gpu_watts: 700, node_watts: 3000, idle_watts: 500}\n"
        "racks:\n"
        "  - {name: r1, type: small, nodes: 'g[1-2]', power_cap_kw: 20}\n"
        "power_enforcement:\n"
        "  state_dir: " +
        dir_ + "/var/lib/%n/state\n";
    WriteDescription(good_);
    open_ = [this](const std::string&) -> absl::StatusOr<std::unique_ptr<node_power::GpuPowerControl>> {
      return std::make_unique<MemoryGpus>(&boards_);
    };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteDescription(const std::string& text) { std::ofstream(dir_ + "/etc/rackwise.yaml") << text; }
  JobScriptEnvironment Job(const std::string& id, const std::string& gpus, const std::string& watts = "") {
    return {id, "g1", gpus, watts, dir_ + "/etc/slurm.conf"};
  }
  JobScriptResult Prolog(const JobScriptEnvironment& env) { return RunProlog(env, dir_ + "/cache/%n", open_); }
  JobScriptResult Epilog(const JobScriptEnvironment& env) { return RunEpilog(env, dir_ + "/cache/%n", open_); }
  std::string Copy() {
    std::ifstream in(dir_ + "/cache/g1/rackwise.last-accepted.yaml");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string dir_, good_;
  Boards boards_;
  NvmlOpener open_;
};

TEST_F(JobScriptTest, AValidDescriptionIsKeptAsTheAcceptedCopy) {
  JobScriptResult started = Prolog(Job("1", "0", "450"));
  EXPECT_EQ(started.exit_code, 0) << started.line;
  EXPECT_EQ(started.line, "power limit 450 W set on GPUs 0");
  EXPECT_EQ(Copy(), good_);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir_ + "/var/lib/g1/state/gpu-power-limits"));  // parents made
  EXPECT_EQ(std::filesystem::status(dir_ + "/cache/g1").permissions(), std::filesystem::perms(0755));
}

TEST_F(JobScriptTest, ABrokenDescriptionUsesTheAcceptedCopyInPrologAndEpilog) {
  ASSERT_EQ(Prolog(Job("1", "0", "450")).exit_code, 0);
  WriteDescription(good_.substr(0, 40));  // truncated mid-file
  // A job declaring nothing counts the type's default, known from the copy.
  JobScriptResult undeclared = Prolog(Job("2", "1"));
  EXPECT_EQ(undeclared.exit_code, 0) << undeclared.line;
  EXPECT_THAT(undeclared.line, HasSubstr("rackwise.yaml rejected (" + dir_ + "/etc/rackwise.yaml:"));
  EXPECT_THAT(undeclared.line, HasSubstr("using the last description this node accepted, " + dir_ +
                                         "/cache/g1/rackwise.last-accepted.yaml; power limit 625 W set on GPUs 1"));
  JobScriptResult probe = Prolog(Job("3", "2", "500"));
  EXPECT_EQ(probe.exit_code, 0) << probe.line;
  EXPECT_THAT(boards_.current_mw, ElementsAre(450000, 625000, 500000, 700000));
  for (const char* job : {"1", "2", "3"}) {
    JobScriptResult finished = Epilog(Job(job, ""));
    EXPECT_EQ(finished.exit_code, 0) << finished.line;
    EXPECT_THAT(finished.line, HasSubstr("power limits restored"));
  }
  EXPECT_THAT(boards_.current_mw, ElementsAre(700000, 700000, 700000, 700000));
  EXPECT_EQ(Copy(), good_);  // a broken file never replaces the copy
}

TEST_F(JobScriptTest, SlurmdsStartKeepsTheCopyBeforeAnyJobRan) {
  // slurmd starts with a good file: the node keeps it, with no job needed.
  JobScriptResult accepted = RunAccept(Job("", ""), dir_ + "/cache/%n");
  EXPECT_EQ(accepted.exit_code, 0);
  EXPECT_THAT(accepted.line, HasSubstr("accepted " + dir_ + "/etc/rackwise.yaml"));
  EXPECT_EQ(Copy(), good_);
  // The file breaks before the node's first job: its first prolog works from the copy (the type's default).
  WriteDescription(good_.substr(0, 40));
  JobScriptResult first = Prolog(Job("1", "0"));
  EXPECT_EQ(first.exit_code, 0) << first.line;
  EXPECT_THAT(first.line, HasSubstr("power limit 625 W set on GPUs 0"));
  // slurmd restarting on the broken file never fails, and the copy stays the good one.
  accepted = RunAccept(Job("", ""), dir_ + "/cache/%n");
  EXPECT_EQ(accepted.exit_code, 0);
  EXPECT_THAT(accepted.line, HasSubstr("rackwise.yaml rejected"));
  EXPECT_EQ(Copy(), good_);
}

TEST_F(JobScriptTest, WithNeitherFileNorCopyOnlyTheJobsOwnWattsAreKnown) {
  WriteDescription("cluster: [");
  NodeDescription used = LoadNodeDescription(Job("4", "0"), dir_ + "/cache/%n");
  EXPECT_EQ(used.topology, nullptr);
  EXPECT_EQ(used.settings.state_file, "/var/lib/rackwise/gpu-power-limits");
  EXPECT_THAT(used.note, HasSubstr("no description this node accepted (cannot read " + dir_ +
                                   "/cache/g1/rackwise.last-accepted.yaml"));
  EXPECT_THAT(used.note, HasSubstr("default power_enforcement settings and the watts the job declared"));
}

TEST_F(JobScriptTest, AGpuLeftLimitedByAFinishedJobIsGivenBackOrRefused) {
  ASSERT_EQ(Prolog(Job("1", "0,1", "450")).exit_code, 0);
  boards_.refuse = true;
  JobScriptResult failed = Epilog(Job("1", ""));
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_THAT(failed.line, HasSubstr("GPU 0 not restored to 700 W: Insufficient Permissions"));
  // While the restore still fails, the next job on GPU 1 is refused, declared watts or not.
  JobScriptResult refused = Prolog(Job("5", "1"));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.line, HasSubstr("GPUs 1 still limited for finished slurm-job-1 cannot be restored"));
  EXPECT_EQ(Prolog(Job("6", "2", "700")).exit_code, 0) << "a GPU the finished job did not hold is free";
  boards_.refuse = false;
  JobScriptResult started = Prolog(Job("7", "1"));
  EXPECT_EQ(started.exit_code, 0) << started.line;
  EXPECT_THAT(started.line, HasSubstr("limits of finished jobs given back: slurm-job-1's GPU 0 back to 700 W, GPU 1 "
                                      "back to 700 W; power limit 625 W set on GPUs 1"));
  EXPECT_THAT(boards_.current_mw, ElementsAre(700000, 625000, 700000, 700000));
}

}  // namespace
}  // namespace rackwise::slurm
