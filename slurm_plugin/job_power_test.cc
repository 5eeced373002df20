// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for the job prolog's view of a job's GPU power: counted watts, GPU indices, settings and defaults.
#include "job_power.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  EXPECT_EQ(set.state_file, "/run/rackwise/g2/gpu-power-limits");
}

TEST(DescriptionPathBeside, SlurmConf) {
  EXPECT_EQ(DescriptionPathBeside("/etc/slurm/slurm.conf"), "/etc/slurm/rackwise.yaml");
  EXPECT_EQ(DescriptionPathBeside(""), "/etc/slurm/rackwise.yaml");
}

}  // namespace
}  // namespace rackwise::slurm
