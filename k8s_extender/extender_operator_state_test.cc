// The operator state of the extender service: what gRPC changes save, that a change which cannot be saved is
// undone (an acknowledged change is always on disk), and that a saved state file brings everything back.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "extender_service.h"
#include "rackwise/cluster_state.h"
#include "rackwise/synthetic_cluster.h"
#include "state_file.h"

namespace rackwise::k8s {
namespace {

namespace fs = std::filesystem;

v1::ClusterDescription Cluster() {
  SyntheticClusterSpec spec;
  spec.name = "op";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0});
  return BuildSyntheticCluster(spec);
}

std::unique_ptr<ExtenderService> NewService(ExtenderMetrics* metrics) {
  auto t = Topology::Build(Cluster());
  EXPECT_TRUE(t.ok()) << t.status();
  auto s =
      std::make_unique<ExtenderService>(std::make_unique<Topology>(std::move(*t)), ExtenderOptions{}, nullptr, metrics);
  s->SetSynced(true);
  return s;
}

PlacementRequest Job(const std::string& id, int gpus) {
  PlacementRequest r;
  r.id = id;
  r.gpus = gpus;
  r.gpus_per_node = gpus;
  return r;
}

// Everything the ledger says, for comparing before and after a refused change.
std::string Fingerprint(const ExtenderService& s) {
  return s.WithLedger([](const Ledger& l) { return CaptureClusterState(l).DebugString(); });
}

TEST(OperatorState, AChangeThatCannotBeSavedIsUndone) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  ASSERT_TRUE(s->SetPowerCap("b0-r0000", 25).ok());
  ASSERT_TRUE(s->Place(Job("kept", 8), true).ok());
  int saves = 0;
  s->SetStateSink([&](const v1::ClusterState&) {
    ++saves;
    return absl::UnavailableError("disk full");
  });
  const std::string before = Fingerprint(*s);
  EXPECT_EQ(s->SetPowerCap("b0-r0001", 12).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s->SetNodeHealth("b0-r0001-n02", NodeHealth::kDown, {1, 2}).code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<PlacementOutcome> placed = s->Place(Job("lost", 4), true);
  EXPECT_EQ(placed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(s->Release("kept"));
  EXPECT_EQ(saves, 4);
  EXPECT_EQ(Fingerprint(*s), before) << "every refused change was undone";
  EXPECT_TRUE(s->CheckInvariants().ok());
}

TEST(OperatorState, SavedStateComesBackAndHoldsOnlyWhatOperatorsSet) {
  const fs::path dir = fs::temp_directory_path() / ("rackwise-opstate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "rackwise.state.yaml").string();
  ExtenderMetrics metrics;
  auto first = NewService(&metrics);
  ASSERT_TRUE(AttachStateFile(path, Cluster(), first.get()).ok());
  ASSERT_TRUE(first->SetPowerCap("b0-r0001", 21.5).ok());
  ASSERT_TRUE(first->SetNodeHealth("b0-r0001-n01", NodeHealth::kDrained, {}).ok());
  ASSERT_TRUE(first->SetNodeHealth("b0-r0001-n02", NodeHealth::kUp, {3}).ok());
  ASSERT_TRUE(first->Place(Job("op-1", 8), true).ok());
  ASSERT_TRUE(first->Place(Job("op-2", 2), true).ok());
  ASSERT_TRUE(first->Release("op-2"));
  first->ApplyNode("b0-r0000-n04", /*ready=*/false, false);  // the API server's view: not saved

  auto second = NewService(&metrics);
  absl::StatusOr<v1::ClusterState> restored = AttachStateFile(path, Cluster(), second.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->allocations_size(), 1);
  EXPECT_EQ(restored->nodes_size(), 2);
  EXPECT_EQ(restored->caps_size(), 1);
  EXPECT_EQ(second->OperatorState().DebugString(), first->OperatorState().DebugString());
  second->ApplyNode("b0-r0000-n04", false, false);
  EXPECT_EQ(Fingerprint(*second), Fingerprint(*first));
  EXPECT_TRUE(second->Release("op-1")) << "a restored allocation is the operator's to release";
  fs::remove_all(dir);
}

TEST(OperatorState, ABadStateFileIsAnErrorNamingItsLine) {
  const fs::path dir = fs::temp_directory_path() / ("rackwise-badstate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "s.yaml").string();
  std::ofstream(path) << "caps:\n  - name: b0-r0000\n    power_cap_kw: 1e300\n";
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  absl::StatusOr<v1::ClusterState> restored = AttachStateFile(path, Cluster(), s.get());
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.status().message().find("s.yaml:3:"), std::string::npos) << restored.status();
  EXPECT_EQ(DefaultStateFile("/etc/rackwise/rackwise.yaml"), "/etc/rackwise/rackwise.state.yaml");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rackwise::k8s
