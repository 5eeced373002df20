// The libyaml event reader against the yaml-cpp node-tree mapper it replaced (kept for the tests as an
// independent checker, yaml_tree_testing.h): random states written as state files are (ProtoToYaml, which
// is all placement's ClusterStateToYaml does) read back
// equal with the same lines, and malformed texts (hand-picked and random mutations of valid ones) give the same
// diagnostics, word for word and line for line. Then what only the stream does: aliases, budgets, documents.
#include "yaml_stream.h"

#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto_to_yaml.h"
#include "rackwise/cluster_description.h"
#include "rackwise/synthetic_cluster.h"
#include "rackwise/testing/heap_usage.h"
#include "rackwise/topology.h"
#include "yaml_tree_testing.h"

namespace rackwise {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

struct Read {
  bool usable = false;
  v1::ClusterState state;
  Diagnostics diagnostics;
  std::string Text() const {
    std::string out;
    for (const Diagnostic& d : diagnostics) out += d.ToString() + "\n";
    return out;
  }
};

Read Stream(const std::string& yaml, LineTable* lines = nullptr, size_t max_events = 1'000'000) {
  Read r;
  LineTable local;
  r.usable = StreamYamlToProto(yaml, "s.yaml", "state file", true, &r.state, lines ? lines : &local, &r.diagnostics,
                               max_events);
  return r;
}

// What the readers did before: yaml-cpp's node tree, mapped by reflection.
Read Tree(const std::string& yaml, SourceLines* lines = nullptr) {
  Read r;
  SourceLines local;
  std::optional<YAML::Node> doc = ParseYamlDocument(yaml, "s.yaml", &r.diagnostics);
  if (!doc) return r;
  if (!doc->IsDefined() || doc->IsNull() || (doc->IsMap() && doc->size() == 0)) {
    r.usable = true;
    return r;
  }
  if (!doc->IsMap()) return r;
  bool aborted = false;
  YamlToProto(*doc, &r.state, "s.yaml", lines ? lines : &local, &r.diagnostics, 1'000'000, &aborted);
  r.usable = !aborted;
  return r;
}

bool IsSyntaxError(const Read& r) {
  return !r.usable && !r.diagnostics.empty() && r.diagnostics[0].message.find("YAML syntax error") == 0;
}

// Both readers agree, except on the words of a syntax error (each parser has its own) and on what counts as
// one at all: yaml-cpp accepts some text libyaml refuses, and the other way round.
void ExpectSameReading(const std::string& yaml) {
  SCOPED_TRACE(yaml);
  Read tree = Tree(yaml);
  Read stream = Stream(yaml);
  if (IsSyntaxError(tree) || IsSyntaxError(stream)) return;
  EXPECT_EQ(stream.usable, tree.usable);
  EXPECT_EQ(stream.Text(), tree.Text());
  EXPECT_EQ(stream.state.DebugString(), tree.state.DebugString());  // NaN equal to NaN, unlike Equals
}

v1::ClusterDescription TestCluster() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 3, 4, 0, 8, 3, 0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18, 0, 8, 2, 0});
  return BuildSyntheticCluster(spec);
}

// A random valid state of `cluster`: allocations on distinct GPUs with awkward ids, health, failed GPUs, caps.
v1::ClusterState RandomState(const v1::ClusterDescription& cluster, std::mt19937* rng) {
  Diagnostics diagnostics;
  absl::StatusOr<Topology> t = Topology::Build(cluster);
  std::vector<std::pair<std::string, int>> nodes;
  for (const Node& n : t->nodes()) nodes.push_back({n.name, n.gpus});
  std::vector<uint64_t> used(nodes.size(), 0);
  static const char* const kIds[] = {"job", "pod/ns-a/x", "a: b", "'quoted'", "#7", "über", "- dash", "12", "true"};
  auto pick = [&](size_t n) { return static_cast<size_t>((*rng)() % n); };
  v1::ClusterState s;
  for (int a = 0, count = static_cast<int>(pick(12)); a < count; ++a) {
    v1::Allocation* alloc = s.add_allocations();
    alloc->set_id(std::string(kIds[pick(std::size(kIds))]) + "-" + std::to_string(a));
    if (pick(2)) alloc->set_watts_per_gpu(pick(3) ? 1 + pick(9999) : 412.375);
    for (int k = 0, width = 1 + static_cast<int>(pick(3)); k < width; ++k) {
      size_t n = pick(nodes.size());
      if (used[n] == ~uint64_t{0} >> (64 - nodes[n].second)) continue;
      bool listed = false;
      for (const v1::NodeGpus& ng : alloc->nodes()) listed |= ng.node() == nodes[n].first;
      if (listed) continue;
      v1::NodeGpus* ng = alloc->add_nodes();
      ng->set_node(nodes[n].first);
      for (int g = 0; g < nodes[n].second; ++g) {
        if (used[n] >> g & 1 || pick(3) == 0) continue;
        used[n] |= uint64_t{1} << g;
        ng->add_gpus(static_cast<uint32_t>(g));
      }
      if (ng->gpus_size() == 0) alloc->mutable_nodes()->RemoveLast();
    }
    if (alloc->nodes_size() == 0) s.mutable_allocations()->RemoveLast();
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (pick(6) != 0) continue;
    v1::NodeStatus* ns = s.add_nodes();
    ns->set_node(nodes[n].first);
    ns->set_health(static_cast<v1::NodeHealth>(pick(4)));
    if (pick(2)) ns->add_failed_gpus(static_cast<uint32_t>(pick(static_cast<size_t>(nodes[n].second))));
  }
  for (const v1::Rack& r : cluster.racks()) {
    if (pick(3) != 0) continue;
    v1::CapOverride* cap = s.add_caps();
    cap->set_name(r.name());
    cap->set_power_cap_kw(pick(2) ? 17.25 : static_cast<double>(1 + pick(500)));
  }
  return s;
}

TEST(StreamYamlToProto, RandomStatesReadBackEqualWithTheSameLines) {
  const v1::ClusterDescription cluster = TestCluster();
  const int kAlloc = v1::ClusterState::descriptor()->FindFieldByName("allocations")->index();
  const int kNodes = v1::Allocation::descriptor()->FindFieldByName("nodes")->index();
  const int kId = v1::Allocation::descriptor()->FindFieldByName("id")->index();
  const int kGpus = v1::NodeGpus::descriptor()->FindFieldByName("gpus")->index();
  std::mt19937 rng(20261201);
  for (int round = 0; round < 200; ++round) {
    const v1::ClusterState state = RandomState(cluster, &rng);
    const std::string yaml = ProtoToYaml(state);
    SCOPED_TRACE(yaml);
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterState> again = ParseClusterState(yaml, "s.yaml", cluster, &diagnostics);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(MessageDifferencer::Equals(state, *again)) << again->DebugString();

    LineTable lines;
    SourceLines tree_lines;
    ASSERT_TRUE(Stream(yaml, &lines).usable);
    ASSERT_TRUE(Tree(yaml, &tree_lines).usable);
    for (int a = 0; a < state.allocations_size(); ++a) {
      LineTable::Ref ar = lines.Child(lines.Root(), kAlloc, a);
      std::string ap = "allocations[" + std::to_string(a) + "]";
      EXPECT_EQ(lines.Line(ar), tree_lines.Line(ap));
      EXPECT_EQ(lines.FieldLine(ar, kId), tree_lines.Line(ap + ".id"));
      for (int n = 0; n < state.allocations(a).nodes_size(); ++n) {
        LineTable::Ref nr = lines.Child(ar, kNodes, n);
        std::string np = ap + ".nodes[" + std::to_string(n) + "]";
        EXPECT_EQ(lines.Line(nr), tree_lines.Line(np));
        for (int g = 0; g < state.allocations(a).nodes(n).gpus_size(); ++g) {
          EXPECT_EQ(lines.ItemLine(nr, kGpus, g), tree_lines.Line(np + ".gpus[" + std::to_string(g) + "]"));
        }
      }
    }
  }
}

TEST(StreamYamlToProto, MalformedTextsGetTheDiagnosticsOfTheTreeMapper) {
  const std::vector<std::string> inputs = {
      "allocation: []\n",
      "allocations:\n  - id: a\n    node: [x]\n    nodes:\n      - node: n\n        gpu: [1]\n",
      "allocations:\n  - id: a\n    id: b\n",
      "caps:\n  - name: r\n    power_cap_kw: '7'\n  - name: q\n    power_cap_kw: seven\n",
      "allocations:\n  - id: [a]\n    watts_per_gpu: {x: 1}\n    nodes: n1\n",
      "allocations:\n  - id: a\n    nodes:\n      - node: n\n        gpus: [1, -1, x, 4294967296, '3', ~, 1.5]\n",
      "nodes:\n  - node: n\n    health: sick\n  - node: m\n    health: 'down'\n  - node: o\n    health: DOWN\n",
      "nodes:\n  - node: n\n    failed_gpus: 3\n",
      "allocations: {id: a}\n",
      "allocations:\n  - 7\n  - ~\n  - [a]\n",
      "caps:\n  - name: r\n    power_cap_kw: !guess 30\n",
      "caps:\n  - name: r\n    power_cap_kw: 1e99999\n  - name: s\n    power_cap_kw: .nan\n",
      "caps:\n  - {name: r, power_cap_kw: -.inf}\n  - {name: 7, power_cap_kw: +12}\n",
      "allocations:\n  - ? [a, b]\n    : 1\n    id: x\n",
      "allocations:\n  - id:\n    nodes:\n",
      "allocations:\n  - id: \"\\xe9t\\xe9\"\n",
      "allocations: &a\n  - id: a\n    nodes: [{node: n, gpus: [1]}]\nnodes: *a\n",
      "caps:\n  - &c {name: r, power_cap_kw: 1}\n  - *c\n  - {name: *n, power_cap_kw: 2}\n",
      "x: &n r\ncaps:\n  - {name: *n, power_cap_kw: 2}\n",
      "allocations: |\n  - id: a\n",
      "allocations:\n  - id: a\n    watts_per_gpu: true\n",
      "caps: []\nallocations: ~\nnodes: {}\n",
      "caps:\n  - name: r\n    power_cap_kw: 1\nallocations: 7\ncaps: []\n",
  };
  for (const std::string& input : inputs) ExpectSameReading(input);
}

// Random single-line edits of valid state files: a value replaced, a key misspelt, a line repeated or dropped.
TEST(StreamYamlToProto, MutatedStatesGetTheDiagnosticsOfTheTreeMapper) {
  const v1::ClusterDescription cluster = TestCluster();
  static const char* const kValues[] = {
      "x",         "-1", "1e999",    "'7'",  "[1, 2]",      "{a: 1}", "~",    "!guess 5", "99999999999999999999",
      "sick",      "",   "*nowhere", "&a 3", "\"\\u00e9\"", "[]",     "0x10", "- 1",      ".inf",
      "4294967295"};
  std::mt19937 rng(14);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int compared = 0;
  for (int round = 0; round < 400; ++round) {
    std::string yaml = ProtoToYaml(RandomState(cluster, &rng));
    std::vector<std::string> lines;
    std::istringstream in(yaml);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.empty()) continue;
    size_t at = pick(lines.size());
    std::string& line = lines[at];
    size_t colon = line.find(": ");
    switch (pick(4)) {
      case 0:
        if (colon != std::string::npos) line = line.substr(0, colon + 2) + kValues[pick(std::size(kValues))];
        break;
      case 1:
        if (colon != std::string::npos) line.insert(colon, "s");
        break;
      case 2: lines.insert(lines.begin() + static_cast<long>(at), line); break;
      default: lines.erase(lines.begin() + static_cast<long>(at));
    }
    std::string mutated;
    for (const std::string& l : lines) mutated += l + "\n";
    ExpectSameReading(mutated);
    compared += !IsSyntaxError(Tree(mutated)) && !IsSyntaxError(Stream(mutated));
  }
  EXPECT_GT(compared, 300);  // syntax errors (skipped) stay the exception
}

TEST(StreamYamlToProto, EmptyTextsAreEmptyStates) {
  for (const std::string input : {"", "# nothing yet\n", "---\n", "~\n", "{}\n", "---\n...\n"}) {
    Read r = Stream(input);
    EXPECT_TRUE(r.usable) << input << r.Text();
    EXPECT_TRUE(r.diagnostics.empty()) << input;
  }
}

TEST(StreamYamlToProto, UnusableTextsGetOneDiagnosticAtTheirLine) {
  struct Case {
    std::string yaml;
    int line;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"allocations:\n  - id: a\n    bogus: 1\n  - id: [b\n", 5, "YAML syntax error: did not find expected"},
      {"allocations: []\n---\ncaps: []\n", 2, "more than one YAML document ('---'): expected exactly one"},
      {"bogus: 1\n---\n", 2, "more than one YAML document"},
      {"- a\n- b\n", 1, "expected a map of keys at the top of the state file, got a list"},
      {"\n\nhello\n", 3, "expected a map of keys at the top of the state file, got a value"},
      {"caps: *c\n", 1, "alias '*c' names no anchor defined (and complete) before it"},
      {"caps: &c [*c]\n", 1, "alias '*c' names no anchor"},
      {std::string("caps: \x01\n"), 1, "YAML syntax error"},
      {"caps:\n\t- x\n", 2, "YAML syntax error"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    Read r = Stream(c.yaml);
    EXPECT_FALSE(r.usable);
    ASSERT_EQ(r.diagnostics.size(), 1u) << r.Text();
    EXPECT_EQ(r.diagnostics[0].line, c.line) << r.Text();
    EXPECT_THAT(r.diagnostics[0].message, HasSubstr(c.words));
  }
}

TEST(StreamYamlToProto, AliasesAreReplayedAndTheirFanOutIsBounded) {
  Read r = Stream("defaults: &w 700\nallocations:\n  - &a {id: a, watts_per_gpu: *w, nodes: [{node: n, gpus: [1]}]}\n");
  EXPECT_THAT(r.Text(), HasSubstr("s.yaml:1: unknown key 'defaults' at the top level"));
  ASSERT_EQ(r.state.allocations_size(), 1);
  EXPECT_EQ(r.state.allocations(0).watts_per_gpu(), 700);
  // Through the schema's three levels, a thousand aliases each: 10^9 GPU indices if followed naively, from
  // 16 kB of text. The budget stops it.
  std::string zeros = "0", a1000 = "*a", n1000 = "*n";
  for (int i = 1; i < 1000; ++i) zeros += ", 0", a1000 += ", *a", n1000 += ", *n";
  std::string laughs = "g: &g [" + zeros + "]\nn: &n {node: x, gpus: *g}\nns: &ns [" + n1000 +
                       "]\na: &a {id: a, nodes: *ns}\nallocations: [" + a1000 + "]\n";
  Read bounded = Stream(laughs, nullptr, 100'000);
  EXPECT_FALSE(bounded.usable);
  EXPECT_THAT(bounded.Text(), HasSubstr("document too large: more than 100000 values"));
  // Skipping an alias (under an unknown key) costs nothing: the same text without the last line reads fine.
  laughs.erase(laughs.rfind("allocations"));
  EXPECT_TRUE(Stream(laughs, nullptr, 100'000).usable);
}

TEST(StreamYamlToProto, DeepNestingIsSkippedWithoutRecursionAndBounded) {
  std::string deep = "allocations:\n  - bogus: " + std::string(900, '[') + std::string(900, ']') + "\n";
  Read r = Stream(deep);
  EXPECT_TRUE(r.usable) << r.Text();
  EXPECT_THAT(r.Text(), HasSubstr("unknown key 'bogus' in allocations[0]"));
  // libyaml's scanner is quadratic in the nesting depth; the reader stops at 1000 levels.
  deep = "allocations:\n  - bogus: " + std::string(200'000, '[') + std::string(200'000, ']') + "\n";
  r = Stream(deep, nullptr, 10'000'000);
  EXPECT_FALSE(r.usable);
  EXPECT_THAT(r.Text(), HasSubstr("s.yaml:2: YAML syntax error: nested more than 1000 levels deep"));
}

// Not timed (benchmarks measure speed, BENCHMARKS.md section 1): what a read keeps is proportional to the
// allocations and small per allocation. The yaml-cpp path kept a node tree and a string per field (~7 kB per
// one-GPU allocation at its peak); the message plus the integer lines here stay under 1 kB.
TEST(StreamYamlToProto, MemoryPerAllocationIsSmallAndLinear) {
  RACKWISE_SKIP_WITHOUT_HEAP_STATISTICS();
  auto bytes_per_allocation = [](int count) {
    v1::ClusterState s;
    for (int a = 0; a < count; ++a) {
      v1::Allocation* alloc = s.add_allocations();
      alloc->set_id("job-" + std::to_string(1'000'000 + a));
      v1::NodeGpus* ng = alloc->add_nodes();
      ng->set_node("b0-r" + std::to_string(1000 + a / 72) + "-n" + std::to_string(10 + a % 18));
      ng->add_gpus(static_cast<uint32_t>(a % 4));
    }
    const std::string yaml = ProtoToYaml(s);
    s.Clear();
    const size_t before = ::rackwise::testing::HeapBytesInUse();
    auto lines = std::make_unique<LineTable>();
    auto state = std::make_unique<v1::ClusterState>();
    Diagnostics diagnostics;
    EXPECT_TRUE(
        StreamYamlToProto(yaml, "s.yaml", "state file", true, state.get(), lines.get(), &diagnostics, 1u << 30));
    EXPECT_EQ(state->allocations_size(), count);
    return static_cast<double>(::rackwise::testing::HeapBytesInUse() - before) / count;
  };
  const double small = bytes_per_allocation(5'000);
  const double large = bytes_per_allocation(40'000);
  RecordProperty("state_bytes_per_allocation", std::to_string(large));
  EXPECT_LT(large, 1024.0);
  EXPECT_GT(large, 32.0) << "the measurement saw nothing: mallinfo2 is not tracking these allocations";
  EXPECT_LT(large, 1.5 * small);  // linear: no per-file structure that grows faster than the allocations
}

}  // namespace
}  // namespace rackwise
