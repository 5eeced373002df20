// Tests for reading, checking and writing cluster descriptions and state files.
// Data-driven: every file in tests/data/invalid/ (descriptions) and tests/data/invalid_state/ (state files for
// examples/demo.yaml) starts with `# expect: LINE: substring`, and parsing it must produce a diagnostic
// `FILE:LINE: ...substring...`. Every file in tests/data/valid/ (and examples/demo.yaml) must parse cleanly and
// survive a round trip through ClusterDescriptionToYaml.
#include "rackwise/cluster_description.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace rackwise {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSource = RACKWISE_SOURCE_DIR;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> YamlFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Expectation {
  int line = -1;
  std::string substring;
};

// Parses the `# expect: LINE: substring` header lines at the top of a test file.
std::vector<Expectation> Expectations(const std::string& text) {
  std::vector<Expectation> out;
  std::istringstream in(text);
  std::string line;
  const std::string tag = "# expect: ";
  while (std::getline(in, line) && line.rfind(tag, 0) == 0) {
    std::string rest = line.substr(tag.size());
    size_t colon = rest.find(": ");
    out.push_back({std::stoi(rest.substr(0, colon)), rest.substr(colon + 2)});
  }
  return out;
}

std::string Join(const Diagnostics& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += d.ToString() + "\n";
  return out;
}

void ExpectDiagnostics(const fs::path& path, const Diagnostics& diagnostics, const absl::Status& status) {
  std::string text = ReadText(path);
  std::vector<Expectation> expectations = Expectations(text);
  ASSERT_FALSE(expectations.empty()) << path << " has no '# expect: LINE: substring' header";
  EXPECT_FALSE(status.ok()) << path << " parsed without error";
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_EQ(status.message(), diagnostics[0].ToString());
  for (const Expectation& e : expectations) {
    bool found = false;
    for (const Diagnostic& d : diagnostics) {
      EXPECT_EQ(d.file, path.string());
      if (d.line == e.line && d.message.find(e.substring) != std::string::npos) {
        found = true;
        std::string prefix = e.line > 0 ? path.string() + ":" + std::to_string(e.line) + ": " : path.string() + ": ";
        EXPECT_EQ(d.ToString(), prefix + d.message);
      }
    }
    EXPECT_TRUE(found) << path.filename() << ": want line " << e.line << " '" << e.substring << "', got:\n"
                       << Join(diagnostics);
  }
}

TEST(InvalidDescriptions, EachFileReportsItsProblemAtItsLine) {
  std::vector<fs::path> files = YamlFiles(kSource / "tests/data/invalid");
  ASSERT_GE(files.size(), 40u);
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(ReadText(path), path.string(), &diagnostics);
    ExpectDiagnostics(path, diagnostics, d.status());
  }
}

TEST(InvalidStates, EachFileReportsItsProblemAtItsLine) {
  Diagnostics demo_diagnostics;
  absl::StatusOr<v1::ClusterDescription> demo =
      LoadClusterDescription((kSource / "examples/demo.yaml").string(), &demo_diagnostics);
  ASSERT_TRUE(demo.ok()) << Join(demo_diagnostics);
  std::vector<fs::path> files = YamlFiles(kSource / "tests/data/invalid_state");
  ASSERT_GE(files.size(), 15u);
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterState> state = ParseClusterState(ReadText(path), path.string(), *demo, &diagnostics);
    ExpectDiagnostics(path, diagnostics, state.status());
  }
}

std::vector<fs::path> ValidDescriptions() {
  std::vector<fs::path> files = YamlFiles(kSource / "tests/data/valid");
  files.push_back(kSource / "examples/demo.yaml");
  return files;
}

TEST(ValidDescriptions, ParseCleanlyAndRoundTrip) {
  for (const fs::path& path : ValidDescriptions()) {
    SCOPED_TRACE(path.filename().string());
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d = LoadClusterDescription(path.string(), &diagnostics);
    ASSERT_TRUE(d.ok()) << Join(diagnostics);
    EXPECT_TRUE(diagnostics.empty());
    EXPECT_TRUE(ValidateClusterDescription(*d, "memory", &diagnostics)) << Join(diagnostics);

    std::string yaml = ClusterDescriptionToYaml(*d);
    Diagnostics again_diagnostics;
    absl::StatusOr<v1::ClusterDescription> again = ParseClusterDescription(yaml, "written", &again_diagnostics);
    ASSERT_TRUE(again.ok()) << Join(again_diagnostics) << yaml;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*d, *again)) << d->DebugString() << "\n---\n"
                                                                                << again->DebugString();
  }
}

TEST(ValidStates, DemoStateParses) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> demo =
      LoadClusterDescription((kSource / "examples/demo.yaml").string(), &diagnostics);
  ASSERT_TRUE(demo.ok()) << Join(diagnostics);
  absl::StatusOr<v1::ClusterState> state =
      LoadClusterState((kSource / "tests/data/valid_state/demo_state.yaml").string(), *demo, &diagnostics);
  ASSERT_TRUE(state.ok()) << Join(diagnostics);
  ASSERT_EQ(state->allocations_size(), 2);
  EXPECT_EQ(state->allocations(1).watts_per_gpu(), 900);
  EXPECT_EQ(state->allocations(0).nodes(0).gpus_size(), 8);
  ASSERT_EQ(state->nodes_size(), 3);
  EXPECT_EQ(state->nodes(0).health(), v1::NODE_HEALTH_DRAINED);
  EXPECT_EQ(state->nodes(1).health(), v1::NODE_HEALTH_DOWN);
  EXPECT_EQ(state->nodes(2).failed_gpus(0), 2u);
  EXPECT_EQ(state->caps(1).power_cap_kw(), 380);
}

TEST(ClusterState, EmptyFileIsAnEmptyState) {
  v1::ClusterDescription none;
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterState> state = ParseClusterState("# nothing yet\n", "state.yaml", none, &diagnostics);
  ASSERT_TRUE(state.ok()) << Join(diagnostics);
  EXPECT_EQ(state->allocations_size(), 0);
}

TEST(ParseClusterDescription, MapsEveryFieldOfTheDemo) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d =
      LoadClusterDescription((kSource / "examples/demo.yaml").string(), &diagnostics);
  ASSERT_TRUE(d.ok()) << Join(diagnostics);
  EXPECT_EQ(d->cluster(), "demo");
  ASSERT_EQ(d->node_types_size(), 2);
  EXPECT_EQ(d->node_types(1).name(), "gb200-tray");
  EXPECT_EQ(d->node_types(1).gpus(), 4u);
  EXPECT_EQ(d->node_types(1).nvlink(), v1::NVLINK_SCOPE_RACK);
  EXPECT_EQ(d->node_types(0).idle_watts(), 2500);
  ASSERT_EQ(d->power_domains_size(), 3);
  EXPECT_EQ(d->power_domains(1).parent(), "hall-1");
  ASSERT_EQ(d->racks_size(), 8);
  EXPECT_EQ(d->racks(4).nodes(), "nvl01-t[01-18]");
  EXPECT_EQ(d->racks(3).power_cap_kw(), 30);
  EXPECT_EQ(d->racks(0).scalable_unit(), "su1");
  EXPECT_EQ(d->policy().default_locality(), v1::LOCALITY_PREFERRED);
  EXPECT_EQ(d->policy().max_watts_per_gpu(), 1500);
}

TEST(ParseClusterDescription, ReportsEveryProblemNotJustTheFirst) {
  const char* yaml =
      "cluster: t\n"
      "node_types:\n"
      "  - name: hgx\n"
      "    gpus: 99\n"  // line 4
      "    nvlink: node\n"
      "    node_watts: 100\n"
      "    idle_watts: 200\n"  // line 7
      "racks:\n"
      "  - name: r1\n"
      "    type: nope\n"     // line 10
      "    nodes: n[3-1]\n"  // line 11
      "    power_cap_kw: 1\n"
      "    colour: red\n";  // line 13
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, "f.yaml", &diagnostics);
  ASSERT_FALSE(d.ok());
  std::vector<int> lines;
  for (const Diagnostic& diag : diagnostics) lines.push_back(diag.line);
  EXPECT_THAT(lines, ::testing::UnorderedElementsAre(4, 7, 10, 11, 13)) << Join(diagnostics);
  EXPECT_EQ(d.status().message(), diagnostics[0].ToString());
}

TEST(ParseClusterDescription, NullDiagnosticsPointerIsAllowed) {
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription("cluster: [", "x.yaml", nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("x.yaml:"));
}

TEST(LoadClusterDescription, MissingFileIsOneClearDiagnostic) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = LoadClusterDescription("/nonexistent/rackwise.yaml", &diagnostics);
  ASSERT_FALSE(d.ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(), "/nonexistent/rackwise.yaml: cannot open the file (missing or unreadable)");
  diagnostics.clear();
  EXPECT_FALSE(LoadClusterDescription(kSource.string(), &diagnostics).ok());
  EXPECT_THAT(Join(diagnostics), HasSubstr("is a directory"));
}

TEST(ValidateClusterDescription, InMemoryDescriptionsGetLineZero) {
  v1::ClusterDescription d;
  d.set_cluster("mem");
  v1::NodeType* t = d.add_node_types();
  t->set_name("hgx");
  t->set_gpus(8);
  t->set_nvlink(v1::NVLINK_SCOPE_NODE);
  t->set_node_watts(10000);
  t->set_idle_watts(2000);
  v1::Rack* r = d.add_racks();
  r->set_name("r1");
  r->set_type("hgx");
  r->set_nodes("n[1-4]");
  r->set_power_cap_kw(50);
  Diagnostics diagnostics;
  EXPECT_TRUE(ValidateClusterDescription(d, "mem", &diagnostics)) << Join(diagnostics);

  r->set_power_cap_kw(7);  // 4 x 2 kW idle
  t->set_nvlink(static_cast<v1::NvlinkScope>(9));
  EXPECT_FALSE(ValidateClusterDescription(d, "mem", &diagnostics));
  ASSERT_EQ(diagnostics.size(), 2u) << Join(diagnostics);
  EXPECT_EQ(diagnostics[0].line, 0);
  EXPECT_THAT(Join(diagnostics), HasSubstr("mem: node type 'hgx': unknown nvlink value 9"));
  EXPECT_THAT(Join(diagnostics), HasSubstr("mem: rack 'r1': idle draw 8 kW already exceeds its power cap 7 kW"));
}

TEST(ClusterDescriptionToYaml, WritesTheDocumentedKeyOrderAndRoundTrips) {
  v1::ClusterDescription d;
  d.set_cluster("written");
  v1::NodeType* t = d.add_node_types();
  t->set_name("tray");
  t->set_gpus(4);
  t->set_nvlink(v1::NVLINK_SCOPE_RACK);
  t->set_gpu_watts(1200.25);
  t->set_node_watts(6600.1);
  t->set_idle_watts(0.1 + 0.2);  // not exactly 0.3: the writer must keep every bit
  v1::PowerDomain* pd = d.add_power_domains();
  pd->set_name("row");
  pd->set_power_cap_kw(400);
  v1::Rack* r = d.add_racks();
  r->set_name("nvl01");
  v1::NodeGroup* g = r->add_node_groups();
  g->set_type("tray");
  g->set_nodes("nvl01-t[01-18]");
  r->set_power_cap_kw(132);
  r->set_power_domain("row");
  r->set_scalable_unit("su1");
  d.mutable_policy()->set_default_locality(v1::LOCALITY_REQUIRED);
  d.mutable_policy()->mutable_weights()->set_rail_alignment(3);

  std::string yaml = ClusterDescriptionToYaml(d);
  EXPECT_LT(yaml.find("cluster:"), yaml.find("node_types:"));
  EXPECT_LT(yaml.find("node_types:"), yaml.find("power_domains:"));
  EXPECT_LT(yaml.find("power_domains:"), yaml.find("racks:"));
  EXPECT_LT(yaml.find("racks:"), yaml.find("policy:"));
  EXPECT_LT(yaml.find("gpus: 4"), yaml.find("nvlink: rack"));
  EXPECT_LT(yaml.find("node_watts:"), yaml.find("idle_watts:"));
  EXPECT_THAT(yaml, HasSubstr("default_locality: required"));
  EXPECT_THAT(yaml, HasSubstr("\n\nracks:"));

  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> again = ParseClusterDescription(yaml, "written.yaml", &diagnostics);
  ASSERT_TRUE(again.ok()) << Join(diagnostics) << yaml;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(d, *again)) << yaml;
}

// Hostile input: each must come back as diagnostics, quickly, without throwing or crashing.
TEST(ParseClusterDescription, SurvivesHostileInput) {
  std::vector<std::string> inputs;
  inputs.push_back(std::string(100000, '['));  // deep flow nesting
  inputs.push_back(std::string(50000, '{'));
  std::string deep_block;
  for (int i = 0; i < 2100; ++i) deep_block += std::string(i, ' ') + "- \n";
  inputs.push_back(deep_block);
  // Billion laughs: aliases that fan out; the schema-driven walk must bound its work.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c, ++prev) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + prev;
    laughs += "]\n";
  }
  inputs.push_back(laughs);
  std::string rack = "{name: r, type: t, nodes: 'n[1-2]', power_cap_kw: 1, node_groups: *g}";
  std::string fanout = "cluster: x\nnode_types: []\nx: &g [" + std::string("{type: t, nodes: n1}") + "]\n";
  std::string racks = "racks: &r [";
  for (int i = 0; i < 2000; ++i) racks += (i ? ", " : "") + rack;
  fanout += racks + "]\n";
  inputs.push_back(fanout);
  std::string aliases = "racks: &l [{name: a}]\nnode_types: &m [";
  for (int i = 0; i < 2000; ++i) aliases += (i ? ", " : "") + std::string("*l");
  inputs.push_back(aliases + "]\n");
  inputs.push_back("cluster: &a [*a]\n");  // alias to itself
  inputs.push_back("a: &x\n  b: *x\n");
  inputs.push_back("cluster: 1e99999999999999999999\nracks: 99999999999999999999999999999999\n");
  inputs.push_back("node_types:\n  - gpus: 18446744073709551616\n    node_watts: -1e308\n    idle_watts: 1e308\n");
  inputs.push_back(std::string("\0\xff\xfe\x01: \x80", 7));
  inputs.push_back("racks:\n  - name: r\n    nodes: n[0-18446744073709551615]\n");
  inputs.push_back("racks:\n  - nodes: " + std::string(200000, 'n') + "\n");
  inputs.push_back("%YAML 9.9\n---\n!!binary x: y\n");
  inputs.push_back("? |\n  x\n: *undefined\n");
  for (const std::string& input : inputs) {
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(input, "hostile.yaml", &diagnostics);
    EXPECT_FALSE(d.ok()) << input.substr(0, 80);
    EXPECT_FALSE(diagnostics.empty());
    v1::ClusterDescription demo;
    absl::StatusOr<v1::ClusterState> s = ParseClusterState(input, "hostile.yaml", demo, &diagnostics);
    EXPECT_FALSE(s.ok()) << input.substr(0, 80);
  }
}

TEST(ParseClusterDescription, FanOutThroughAliasesIsBounded) {
  // 3,000 racks, each an alias of a rack whose node_groups is an alias of 300 groups: 900,000 groups if
  // walked naively. The mapper stops at its visit budget with one diagnostic.
  std::string groups = "g: &g [";
  for (int i = 0; i < 300; ++i) groups += (i ? ", " : "") + std::string("{type: t, nodes: n1}");
  std::string yaml = "cluster: x\nnode_types: []\nzz_unused: [" + groups + "]]\nracks: [";
  yaml += "&r {name: r, node_groups: *g, power_cap_kw: 1}";
  for (int i = 1; i < 3000; ++i) yaml += ", *r";
  yaml += "]\n";
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(yaml, "fan.yaml", &diagnostics);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(Join(diagnostics), HasSubstr("document too large"));
}

}  // namespace
}  // namespace rackwise
