// SPDX-License-Identifier: GPL-2.0-or-later
// The steered limits file: what is written parses back to the same lines, every malformed field is refused with
// the file, the line and the field, and the book numbers each job's changes.
#include "steered_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rackwise/cluster_description.h"

namespace rackwise::slurm {
namespace {

using ::testing::HasSubstr;

TEST(SteeredLimits, WrittenTextParsesBack) {
  const std::vector<SteeredLimit> limits = {
      {1234, 475'500, 600'000, 7, {{"gpu01", {0, 1, 2, 3}}, {"gpu02", {5}}}},
      {99, 210'000, 962'500, 1, {{"gpu03", {7}}}},
  };
  const std::string text = SteeredLimitsToText(limits);
  EXPECT_THAT(text, HasSubstr("\n1234 475.500 600.000 7 gpu01:0,1,2,3 gpu02:5\n"));
  absl::StatusOr<std::vector<SteeredLimit>> parsed = ParseSteeredLimits(text, "limits");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, limits);
  EXPECT_TRUE(ParseSteeredLimits(SteeredLimitsToText({}), "limits")->empty());
}

TEST(SteeredLimits, BadInputNamesFileLineAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"12 475 600 7", "f:2: field gpus: '12 475 600 7' has fewer than 5 fields"},
      {"x 475 600 7 n:0", "f:2: field job_id: 'x' is not a Slurm job id"},
      {"0 475 600 7 n:0", "f:2: field job_id: '0' is not a Slurm job id"},
      {"12 -5 600 7 n:0", "f:2: field watts_per_gpu: '-5' is not a power in watts"},
      {"12 nan 600 7 n:0", "f:2: field watts_per_gpu: 'nan' is not a power"},
      {"12 475 W 7 n:0", "f:2: field declared_watts_per_gpu: 'W' is not a power"},
      {"12 700 600 7 n:0", "f:2: field watts_per_gpu: '700' is above the declared 600 W"},
      {"12 475 600 -1 n:0", "f:2: field generation: '-1' is not a whole number"},
      {"12 475 600 7 n0", "f:2: field gpus: 'n0' is not node:gpu,gpu"},
      {"12 475 600 7 n:0,x", "f:2: field gpus: 'n:0,x' has 'x', not a GPU index (0 to 63)"},
      {"12 475 600 7 n:64", "f:2: field gpus: 'n:64' has '64', not a GPU index"},
      {"12 475 600 7 n:0 n:1", "f:2: field gpus: 'n:1' names a node twice"},
  };
  for (const auto& [line, error] : cases) {
    absl::StatusOr<std::vector<SteeredLimit>> parsed = ParseSteeredLimits(absl::StrCat("# header\n", line, "\n"), "f");
    ASSERT_FALSE(parsed.ok()) << line;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(error)) << line;
  }
  absl::StatusOr<std::vector<SteeredLimit>> twice = ParseSteeredLimits("5 400 600 1 n:0\n\n5 300 600 2 n:0\n", "f");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("f:3: field job_id: '5' is listed twice"));
}

TEST(SteeredLimitsBook, ListsLedgerJobsWithTheirGpusAndCountsChanges) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(
      "cluster: t\n"
      "node_types:\n"
      "  - {name: hgx, gpus: 8, nvlink: node, gpu_watts: 700, node_watts: 10200, idle_watts: 2500}\n"
      "racks:\n"
      "  - {name: r1, type: hgx, nodes: 'g[1-2]', power_cap_kw: 41}\n",
      "t.yaml", &diagnostics);
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<Topology> topology = Topology::Build(*d);
  ASSERT_TRUE(topology.ok()) << topology.status();
  Ledger ledger(*topology);
  ASSERT_TRUE(ledger.Commit({"7", {{0, 0b11}, {1, 0b100}}, 600'000}).ok());
  ASSERT_TRUE(ledger.Commit({"pod-a", {{1, 0b1}}, 600'000}).ok());
  SteeredLimitsBook book;
  std::vector<SteeredLimit> first = book.Lines(
      ledger, {{"7", 600'000, 450'000}, {"pod-a", 600'000, 450'000}, {"8", 600'000, 450'000}});  // not a job id; gone
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], (SteeredLimit{7, 450'000, 600'000, 1, {{"g1", {0, 1}}, {"g2", {2}}}}));
  EXPECT_EQ(book.Lines(ledger, {{"7", 600'000, 450'000}})[0].generation, 1u);  // unchanged: same generation
  EXPECT_EQ(book.Lines(ledger, {{"7", 600'000, 400'000}})[0].generation, 2u);  // changed: the next
  EXPECT_TRUE(book.Lines(ledger, {}).empty());
  EXPECT_EQ(book.Lines(ledger, {{"7", 600'000, 400'000}})[0].generation, 3u);  // held again after a release
}

}  // namespace
}  // namespace rackwise::slurm
