// rackwise import, checked by round trips: every example cluster and the Slurm test cluster, exported to
// slurm.conf/gres.conf/topology.conf (tree and block) and to a Kubernetes NodeList, imported back, its guessed
// figures replaced by the original's (and the power hierarchy, policy, enforcement and telemetry settings, which
// no scheduler holds), equals the original. The skeleton itself must be refused by the validator once per guess, at the
// guess's line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "adopt/cluster_export.h"
#include "adopt/description_skeleton.h"
#include "adopt/k8s_inventory.h"
#include "adopt/slurm_inventory.h"
#include "google/protobuf/util/message_differencer.h"
#include "rackwise/cluster_description.h"
#include "rackwise/guess_tag.h"
#include "rackwise/hostlist.h"

namespace rackwise::adopt {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = RACKWISE_SOURCE_DIR;

std::vector<fs::path> Clusters() {
  std::vector<fs::path> files = {kSource / "tests/integration/slurm/cluster.yaml"};
  for (const auto& entry : fs::directory_iterator(kSource / "examples")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

v1::ClusterDescription Load(const fs::path& path) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = LoadClusterDescription(path.string(), &diagnostics);
  EXPECT_TRUE(d.ok()) << path;
  return d.value_or(v1::ClusterDescription());
}

// Hostlists compared by the names they hold; a one-group rack written as the shorthand.
void Canonicalise(v1::ClusterDescription* d) {
  for (v1::Rack& rack : *d->mutable_racks()) {
    if (rack.node_groups_size() == 1) {
      rack.set_type(rack.node_groups(0).type());
      rack.set_nodes(rack.node_groups(0).nodes());
      rack.clear_node_groups();
    }
    if (!rack.nodes().empty()) rack.set_nodes(CompressHostlist(*ExpandHostlist(rack.nodes())));
    for (v1::NodeGroup& g : *rack.mutable_node_groups()) g.set_nodes(CompressHostlist(*ExpandHostlist(g.nodes())));
  }
}

// The administrator's part: the real figures for every guess, plus what no scheduler knows.
void Complete(const v1::ClusterDescription& original, v1::ClusterDescription* skeleton) {
  for (v1::NodeType& t : *skeleton->mutable_node_types()) {
    for (const v1::NodeType& o : original.node_types()) {
      if (o.name() != t.name()) continue;
      t.set_gpu_watts(o.gpu_watts());
      t.set_node_watts(o.node_watts());
      t.set_idle_watts(o.idle_watts());
    }
  }
  for (v1::Rack& r : *skeleton->mutable_racks()) {
    for (const v1::Rack& o : original.racks()) {
      if (o.name() != r.name()) continue;
      r.set_power_cap_kw(o.power_cap_kw());
      r.set_power_domain(o.power_domain());
    }
  }
  *skeleton->mutable_power_domains() = original.power_domains();
  if (original.has_policy()) *skeleton->mutable_policy() = original.policy();
  // Node-side enforcement and telemetry settings are the administrator's too: no scheduler configuration holds them.
  if (original.has_power_enforcement()) *skeleton->mutable_power_enforcement() = original.power_enforcement();
  if (original.has_telemetry()) *skeleton->mutable_telemetry() = original.telemetry();
}

// The skeleton's YAML is refused once per guessed figure, at its line; without the tags it parses to `skeleton`.
void ExpectGuessesRefused(const std::string& yaml, const v1::ClusterDescription& skeleton) {
  std::vector<int> guess_lines;
  int line = 0;
  for (absl::string_view text : absl::StrSplit(yaml, '\n')) {
    ++line;
    if (absl::StrContains(text, kGuessTag)) guess_lines.push_back(line);
  }
  EXPECT_EQ(guess_lines.size(), 3u * skeleton.node_types_size() + skeleton.racks_size());
  Diagnostics diagnostics;
  EXPECT_FALSE(ParseClusterDescription(yaml, "skeleton.yaml", &diagnostics).ok());
  std::vector<int> refused;
  for (const Diagnostic& d : diagnostics) {
    EXPECT_THAT(d.message, testing::HasSubstr("guessed by rackwise import"));
    refused.push_back(d.line);
  }
  EXPECT_EQ(refused, guess_lines);
  Diagnostics none;
  absl::StatusOr<v1::ClusterDescription> untagged =
      ParseClusterDescription(absl::StrReplaceAll(yaml, {{" !guess ", " "}}), "skeleton.yaml", &none);
  ASSERT_TRUE(untagged.ok()) << (none.empty() ? "" : none[0].ToString());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*untagged, skeleton));
}

void ExpectRoundTrip(const v1::ClusterDescription& original, const v1::ClusterDescription& skeleton) {
  std::string yaml = SkeletonToYaml(skeleton, "test");
  ExpectGuessesRefused(yaml, skeleton);
  v1::ClusterDescription completed = skeleton;
  Complete(original, &completed);
  v1::ClusterDescription expected = original;
  Canonicalise(&expected);
  Canonicalise(&completed);
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(expected, completed)) << diff;
  Diagnostics diagnostics;
  EXPECT_TRUE(ValidateClusterDescription(completed, "completed", &diagnostics));
}

TEST(ImportRoundTrip, SlurmConfigurationGivesBackEveryCluster) {
  for (const fs::path& path : Clusters()) {
    SCOPED_TRACE(path.filename().string());
    v1::ClusterDescription original = Load(path);
    SlurmExport exported = ExportToSlurm(original);
    SlurmConfigs configs{.slurm_conf = {"slurm.conf", exported.slurm_conf},
                         .gres_confs = {{"gres.conf", exported.gres_conf}},
                         .topology_confs = {{"topology.conf", exported.topology_tree}}};
    if (!exported.topology_block.empty()) configs.topology_confs.push_back({"block.conf", exported.topology_block});
    Diagnostics diagnostics;
    absl::StatusOr<Inventory> inventory = InventoryFromSlurm(configs, &diagnostics);
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    absl::StatusOr<v1::ClusterDescription> skeleton = BuildSkeleton(*inventory, "slurm.conf", &diagnostics);
    ASSERT_TRUE(skeleton.ok()) << skeleton.status();
    ExpectRoundTrip(original, *skeleton);
  }
}

TEST(ImportRoundTrip, KubernetesNodesGiveBackEveryCluster) {
  K8sLabels labels{.rack = "example.com/rack", .scalable_unit = "example.com/su"};
  for (const fs::path& path : Clusters()) {
    SCOPED_TRACE(path.filename().string());
    v1::ClusterDescription original = Load(path);
    Diagnostics diagnostics;
    absl::StatusOr<Inventory> inventory =
        InventoryFromK8sNodes({"nodes.json", ExportToK8sNodes(original, labels)}, labels, &diagnostics);
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    inventory->cluster = original.cluster();  // a NodeList does not name its cluster: --name does
    absl::StatusOr<v1::ClusterDescription> skeleton = BuildSkeleton(*inventory, "nodes.json", &diagnostics);
    ASSERT_TRUE(skeleton.ok()) << skeleton.status();
    ExpectRoundTrip(original, *skeleton);
  }
}

}  // namespace
}  // namespace rackwise::adopt
