// Tests for the YAML -> protobuf reader's mapping rules and its inverse, on the schema's own messages; lines
// looked up by path as the description checkers do.
#include "field_path_lines.h"
#include "yaml_scalar.h"
#include "yaml_stream.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto_to_yaml.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise {
namespace {

using ::testing::HasSubstr;

struct Mapped {
  bool ok = false;
  bool usable = false;
  Diagnostics diagnostics;
  LineTable table;
  const google::protobuf::Message* message = nullptr;
  FieldPathLines lines() const { return FieldPathLines(table, *message); }
  std::string Text() const {
    std::string out;
    for (const Diagnostic& d : diagnostics) out += d.ToString() + "\n";
    return out;
  }
};

Mapped Map(const std::string& yaml, google::protobuf::Message* message, size_t max_events = 1'000'000) {
  Mapped m;
  message->Clear();
  m.usable = StreamYamlToProto(yaml, "t.yaml", "document", true, message, &m.table, &m.diagnostics, max_events);
  m.ok = m.usable && m.diagnostics.empty();
  m.message = message;
  return m;
}

TEST(YamlMapping, FillsScalarsEnumsListsAndNestedMessages) {
  v1::ClusterDescription d;
  Mapped m =
      Map("cluster: c\n"
          "node_types:\n"
          "  - {name: a, gpus: 8, nvlink: Rack, node_watts: 1.5e3, idle_watts: +500}\n"
          "policy:\n"
          "  default_locality: none\n"
          "  weights: {rail_alignment: 0.25}\n",
          &d);
  ASSERT_TRUE(m.ok) << m.Text();
  EXPECT_EQ(d.cluster(), "c");
  EXPECT_EQ(d.node_types(0).gpus(), 8u);
  EXPECT_EQ(d.node_types(0).nvlink(), v1::NVLINK_SCOPE_RACK);
  EXPECT_EQ(d.node_types(0).node_watts(), 1500);
  EXPECT_EQ(d.node_types(0).idle_watts(), 500);
  EXPECT_EQ(d.policy().default_locality(), v1::LOCALITY_NONE);
  EXPECT_EQ(d.policy().weights().rail_alignment(), 0.25);
  EXPECT_EQ(m.lines().Line("node_types[0].gpus"), 3);
  EXPECT_EQ(m.lines().Line("policy.weights.rail_alignment"), 6);
  EXPECT_EQ(m.lines().Line("policy.weights.domain_packing"), 6);  // absent: the nearest ancestor's line
  EXPECT_TRUE(m.lines().Has("policy.default_locality"));
  EXPECT_FALSE(m.lines().Has("racks"));
}

TEST(YamlMapping, RepeatedScalarsAndStateEnums) {
  v1::ClusterState s;
  Mapped m =
      Map("allocations:\n  - id: j\n    nodes:\n      - node: n1\n        gpus: [0, 3]\n"
          "nodes:\n  - {node: n1, health: DRAINED, failed_gpus: [7]}\n",
          &s);
  ASSERT_TRUE(m.ok) << m.Text();
  EXPECT_THAT(s.allocations(0).nodes(0).gpus(), ::testing::ElementsAre(0u, 3u));
  EXPECT_EQ(s.nodes(0).health(), v1::NODE_HEALTH_DRAINED);
  EXPECT_EQ(m.lines().Line("allocations[0].nodes[0].gpus[1]"), 5);
}

TEST(YamlMapping, NullValuesAreAbsent) {
  v1::ClusterDescription d;
  Mapped m = Map("cluster:\nracks: ~\npolicy:\n", &d);
  ASSERT_TRUE(m.ok) << m.Text();
  EXPECT_EQ(d.cluster(), "");
  EXPECT_FALSE(d.has_policy());
  EXPECT_FALSE(m.lines().Has("cluster"));
}

TEST(YamlMapping, IntegerBoundaries) {
  v1::NodeType t;
  EXPECT_TRUE(Map("gpus: 4294967295", &t).ok);
  EXPECT_EQ(t.gpus(), 4294967295u);
  EXPECT_THAT(Map("gpus: 4294967296", &t).Text(), HasSubstr("number out of range"));
  EXPECT_THAT(Map("gpus: -1", &t).Text(), HasSubstr("must not be negative"));
  EXPECT_TRUE(Map("gpus: -0", &t).ok);
  EXPECT_THAT(Map("gpus: 0x10", &t).Text(), HasSubstr("expected a whole number"));
  EXPECT_THAT(Map("gpus: 1e3", &t).Text(), HasSubstr("expected a whole number"));
  EXPECT_THAT(Map("gpus: '8'", &t).Text(), HasSubstr("the quoted string '8'"));
  EXPECT_THAT(Map("gpus: [8]", &t).Text(), HasSubstr("expected a whole number, got a list"));
}

TEST(YamlMapping, Doubles) {
  v1::NodeType t;
  ASSERT_TRUE(Map("node_watts: -.inf\nidle_watts: .NaN\ngpu_watts: 1e-999", &t).ok);
  EXPECT_TRUE(std::isinf(t.node_watts()) && t.node_watts() < 0);
  EXPECT_TRUE(std::isnan(t.idle_watts()));
  EXPECT_EQ(t.gpu_watts(), 0);
  ASSERT_TRUE(Map("node_watts: 1e999", &t).ok);
  EXPECT_TRUE(std::isinf(t.node_watts()));
  EXPECT_THAT(Map("node_watts: 10kW", &t).Text(), HasSubstr("expected a number, got '10kW'"));
  EXPECT_THAT(Map("node_watts: true", &t).Text(), HasSubstr("expected a number"));
  EXPECT_THAT(Map("node_watts: \"700\"", &t).Text(), HasSubstr("quoted string"));
}

TEST(YamlMapping, EnumsTakeShortNamesOnly) {
  v1::NodeType t;
  EXPECT_THAT(Map("nvlink: NVLINK_SCOPE_RACK", &t).Text(), HasSubstr("expected one of: node, rack"));
  EXPECT_THAT(Map("nvlink: unspecified", &t).Text(), HasSubstr("unknown value 'unspecified'"));
  EXPECT_THAT(Map("nvlink: 2", &t).Text(), HasSubstr("unknown value '2'"));
  EXPECT_EQ(EnumValueYamlName(*v1::NodeHealth_descriptor()->FindValueByName("NODE_HEALTH_DOWN")), "down");
  EXPECT_EQ(EnumValueYamlName(*v1::Locality_descriptor()->FindValueByName("LOCALITY_REQUIRED")), "required");
}

TEST(YamlMapping, StringsMustBeUtf8) {
  v1::NodeType t;
  EXPECT_THAT(Map("name: gpu\xff\xfe", &t).Text(), HasSubstr("t.yaml:1: name: not valid UTF-8 text"));
  EXPECT_THAT(Map("name: \xc0\x80", &t).Text(), HasSubstr("not valid UTF-8"));      // overlong NUL
  EXPECT_THAT(Map("name: \xed\xa0\x80", &t).Text(), HasSubstr("not valid UTF-8"));  // a surrogate
  EXPECT_TRUE(Map("name: \"\\xff\"", &t).ok);  // an escape: U+00FF, written as valid UTF-8
  EXPECT_EQ(t.name(), "\u00ff");
  EXPECT_TRUE(Map("name: \"gpu-\u00e9\u4e2d\"", &t).ok);
  EXPECT_EQ(t.name(), "gpu-\u00e9\u4e2d");
}

// libyaml refuses such bytes outright; the reader carries them to the field (yaml_events.cc), so the field and
// its line are named, wherever the bytes stand, and the fields around them still read.
TEST(YamlMapping, StrayBytesReachTheirFieldAndNothingElse) {
  v1::NodeType t;
  Mapped m =
      Map("gpus: 8\nname: 'a\xe9"
          "b'\nnode_watts: 700\n",
          &t);
  EXPECT_EQ(m.Text(), "t.yaml:2: name: not valid UTF-8 text\n");
  EXPECT_EQ(t.gpus(), 8u);
  EXPECT_EQ(t.node_watts(), 700);
  EXPECT_THAT(Map("gpus: 8\nname: x\xe2\x82", &t).Text(), HasSubstr("t.yaml:2: name: not valid UTF-8 text"));
  EXPECT_THAT(Map("gpus: 8\nn\xffme: x\n", &t).Text(), HasSubstr("t.yaml:2: unknown key 'n"));
  // A valid text keeps every character, those the escape uses (U+10FF80..U+10FFFF) included.
  ASSERT_TRUE(Map("name: \"\xf4\x8f\xbe\x80\xf4\x8f\xbf\xbf\"\n", &t).ok);
  EXPECT_EQ(t.name(), "\xf4\x8f\xbe\x80\xf4\x8f\xbf\xbf");
}

TEST(YamlMapping, UnknownAndDuplicateKeysListTheKnownOnes) {
  v1::PowerDomain pd;
  Mapped m = Map("name: a\ncap: 3\nname: b\n", &pd);
  EXPECT_FALSE(m.ok);
  EXPECT_THAT(m.Text(), HasSubstr("t.yaml:2: unknown key 'cap' at the top level (expected one of: name, "
                                  "power_cap_kw, parent)"));
  EXPECT_THAT(m.Text(), HasSubstr("t.yaml:3: duplicate key 'name' (first on line 1)"));
  EXPECT_EQ(pd.name(), "a");
}

TEST(YamlMapping, VisitBudgetStopsAliasFanOut) {
  v1::ClusterState s;
  std::string yaml = "allocations: [&a {id: x, nodes: [{node: n, gpus: [1, 2, 3, 4, 5, 6, 7, 8]}]}";
  for (int i = 0; i < 200; ++i) yaml += ", *a";
  yaml += "]\n";
  Mapped m = Map(yaml, &s, 500);
  EXPECT_FALSE(m.usable);
  EXPECT_THAT(m.Text(), HasSubstr("document too large: more than 500 values"));
  EXPECT_EQ(m.diagnostics.size(), 1u);
  Mapped all = Map(yaml, &s, 100000);
  EXPECT_TRUE(all.ok) << all.Text();
}

TEST(YamlMapping, SyntaxErrorsAndDocuments) {
  v1::ClusterState s;
  EXPECT_THAT(Map("a: [1,\n", &s).Text(), HasSubstr("t.yaml:2: YAML syntax error"));
  EXPECT_THAT(Map("a: 1\n---\nb: 2\n", &s).Text(), HasSubstr("t.yaml:2: more than one YAML document"));
  // Where a value cannot start, the character found there is named (yaml-cpp's words for these were the same).
  for (const char* stray : {",a: t\n", "  ,\n"}) {
    Mapped m = Map(stray, &s);
    EXPECT_FALSE(m.usable) << stray;
    ASSERT_EQ(m.diagnostics.size(), 1u) << m.Text();
    EXPECT_THAT(m.diagnostics[0].message, HasSubstr("YAML syntax error: unexpected character ','")) << m.Text();
  }
  EXPECT_THAT(Map("a: 1\n...\n,\n", &s).Text(), HasSubstr("t.yaml:3: YAML syntax error"));
  Mapped empty = Map("", &s);
  EXPECT_TRUE(empty.ok);
  EXPECT_TRUE(empty.diagnostics.empty());
  Diagnostics refused;
  LineTable table;
  EXPECT_FALSE(StreamYamlToProto("{}\n", "t.yaml", "description", false, &s, &table, &refused, 1000));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].line, 0);
  EXPECT_EQ(refused[0].message, "empty description");
}

TEST(ProtoToYaml, RoundTripsStateMessagesToo) {
  v1::ClusterState s;
  v1::Allocation* a = s.add_allocations();
  a->set_id("job: 1 # not a comment");
  a->set_watts_per_gpu(0.1);
  v1::NodeGpus* n = a->add_nodes();
  n->set_node("null");
  n->add_gpus(0);
  n->add_gpus(7);
  s.add_nodes()->set_health(v1::NODE_HEALTH_DOWN);
  std::string yaml = ProtoToYaml(s);
  v1::ClusterState back;
  Mapped m = Map(yaml, &back);
  ASSERT_TRUE(m.ok) << m.Text() << yaml;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(s, back)) << yaml;
  EXPECT_THAT(yaml, HasSubstr("gpus: [0, 7]"));
  EXPECT_THAT(yaml, HasSubstr("health: down"));
}

}  // namespace
}  // namespace rackwise
