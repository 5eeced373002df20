// Wire codecs against the upstream shapes: PascalCase, lower-case and null-field variants, NodeList mode,
// hostile input.
#include "extender_wire.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

TEST(ExtenderWire, ParsesPascalCaseNodeNames) {
  auto args = ParseExtenderArgs(R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":["a","b"]})");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->has_node_names);
  EXPECT_FALSE(args->has_nodes);
  EXPECT_EQ(args->candidate_nodes().names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(args->pod["metadata"]["name"], "p");
}

TEST(ExtenderWire, KeysMatchCaseInsensitivelyAsGoDoes) {
  auto args = ParseExtenderArgs(R"({"pod":{},"nodenames":["x"]})");
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->candidate_nodes().names(), std::vector<std::string>{"x"});
  auto lower = ParseExtenderArgs(R"({"pod":{},"nodeNames":["y"]})");
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(lower->candidate_nodes().names(), std::vector<std::string>{"y"});
}

TEST(ExtenderWire, NullEverythingMeansNoCandidates) {
  auto args = ParseExtenderArgs(R"({"Pod":null,"Nodes":null,"NodeNames":null})");
  ASSERT_TRUE(args.ok());
  EXPECT_FALSE(args->has_node_names);
  EXPECT_FALSE(args->has_nodes);
  FilterResult r;
  std::string out = EncodeFilterResult(r, *args);
  EXPECT_EQ(out, R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""})");
}

TEST(ExtenderWire, NodeListModeAnswersWithFilteredNodeList) {
  auto args = ParseExtenderArgs(
      R"({"Pod":{},"Nodes":{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]},"NodeNames":null})");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->has_nodes);
  EXPECT_EQ(args->candidate_nodes().names(), (std::vector<std::string>{"a", "b"}));
  FilterResult r;
  r.feasible = {1};
  r.failed.push_back({0, r.AddReason("no")});
  Json out = Json::parse(EncodeFilterResult(r, *args));
  ASSERT_EQ(out["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(out["Nodes"]["items"][0]["metadata"]["name"], "b");
  EXPECT_TRUE(out["NodeNames"].is_null());
  EXPECT_EQ(out["FailedNodes"]["a"], "no");
}

TEST(ExtenderWire, FilterResultRoundTripsThroughAParser) {
  auto args = ParseExtenderArgs(R"({"Pod":{},"NodeNames":["n\"1","n2"]})");
  ASSERT_TRUE(args.ok());
  FilterResult r;
  r.feasible = {0};
  r.unresolvable.push_back({1, r.AddReason("too \\ small\n")});
  Json out = Json::parse(EncodeFilterResult(r, *args));
  EXPECT_EQ(out["NodeNames"][0], "n\"1");
  EXPECT_EQ(out["FailedAndUnresolvableNodes"]["n2"], "too \\ small\n");
  EXPECT_TRUE(out["FailedNodes"].is_null());
}

TEST(ExtenderWire, HostPriorityListIsABareArray) {
  EXPECT_EQ(EncodeHostPriorityList(CandidateNodes({"a", "b", "c"}), {10, 0, 7}),
            R"([{"Host":"a","Score":10},{"Host":"b","Score":0},{"Host":"c","Score":7}])");
  EXPECT_EQ(EncodeHostPriorityList(CandidateNodes(), {}), "[]");
}

TEST(ExtenderWire, BindingArgs) {
  auto b = ParseBindingArgs(R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pod_name, "p");
  EXPECT_EQ(b->pod_namespace, "ns");
  EXPECT_EQ(b->pod_uid, "u");
  EXPECT_EQ(b->node, "n");
  auto lower = ParseBindingArgs(R"({"podname":"p","podnamespace":null,"poduid":null,"node":"n"})");
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(lower->pod_namespace, "default");
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":"p"})").ok());
  EXPECT_FALSE(ParseBindingArgs(R"({"PodName":7,"Node":"n"})").ok());
  EXPECT_EQ(EncodeBindingResult(""), R"({"Error":""})");
}

TEST(ExtenderWire, PreemptionMetaVictims) {
  auto p = ParsePreemptionArgs(
      R"({"Pod":{},"NodeNameToVictims":null,"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->victims.count("foo"), 1u);
  EXPECT_EQ(p->victims["foo"].pod_uids, std::vector<std::string>{"myuid"});
  EXPECT_EQ(EncodePreemptionResult(p->victims),
            R"({"NodeNameToMetaVictims":{"foo":{"Pods":[{"UID":"myuid"}],"NumPDBViolations":1}}})");
  auto full = ParsePreemptionArgs(
      R"({"Pod":{},"NodeNameToVictims":{"bar":{"Pods":[{"metadata":{"uid":"u2"}}],"NumPDBViolations":0}}})");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->victims["bar"].pod_uids, std::vector<std::string>{"u2"});
}

TEST(ExtenderWire, RefusesHostileInput) {
  EXPECT_FALSE(ParseExtenderArgs("").ok());
  EXPECT_FALSE(ParseExtenderArgs("{").ok());
  EXPECT_FALSE(ParseExtenderArgs("[]").ok());
  EXPECT_FALSE(ParseExtenderArgs(R"({"NodeNames":"a"})").ok());
  EXPECT_FALSE(ParseExtenderArgs(R"({"NodeNames":[1,2]})").ok());
  EXPECT_FALSE(ParseExtenderArgs(R"({"Pod":[]})").ok());
  EXPECT_FALSE(ParseExtenderArgs(R"({"Nodes":{"items":[{}]}})").ok());
  std::string deep(200000, '[');
  EXPECT_FALSE(ParseExtenderArgs(deep).ok());
  for (const char* key : {"Pod", "Nodes", "Unknown"}) {
    auto s = ParseExtenderArgs(absl::StrCat("{\"", key, "\":", deep));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("nested deeper"), std::string::npos) << key << ": " << s.status();
  }
  // 63 levels inside the top-level object are fine (64 in all).
  EXPECT_TRUE(ParseExtenderArgs(absl::StrCat("{\"Unknown\":", std::string(63, '['), std::string(63, ']'), "}")).ok());
  EXPECT_FALSE(ParseExtenderArgs(absl::StrCat("{\"Unknown\":", std::string(64, '['), std::string(64, ']'), "}")).ok());
  auto syntax = ParseExtenderArgs(R"({"NodeNames":[)");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("byte"), std::string::npos);
}

TEST(JsonFields, InvalidUtf8IsReplacedSoOutputParses) {
  std::string out;
  AppendJsonString(std::string("a\xff\x01z"), &out);
  Json j = Json::parse(out);
  EXPECT_EQ(j.get<std::string>(), "a\xef\xbf\xbd\x01z");
}

}  // namespace
}  // namespace rackwise::k8s

namespace rackwise::k8s {
namespace {

TEST(ExtenderWire, ScannerDecodesEscapesAndKeepsOtherKeys) {
  auto args = ParseExtenderArgs(
      "{\"Extra\":{\"a\":[1,{\"b\":\"]}\"}]},\"NodeNames\":[\"n\\u00e9\\\"1\",\"\\ud83d\\ude00\",\"a\\/b\"],"
      "\"Pod\":{\"metadata\":{\"name\":\"p}\"}}}");
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->candidate_nodes().names().size(), 3u);
  EXPECT_EQ(args->candidate_nodes().names()[0], "n\xc3\xa9\"1");
  EXPECT_EQ(args->candidate_nodes().names()[1], "\xf0\x9f\x98\x80");
  EXPECT_EQ(args->candidate_nodes().names()[2], "a/b");
  EXPECT_EQ(args->pod["metadata"]["name"], "p}");
}

TEST(ExtenderWire, ScannerRefusesWhatGoRefuses) {
  for (const char* bad : {R"({"NodeNames":["a" "b"]})", R"({"NodeNames":["a",]})", "{\"NodeNames\":[\"a\x01\"]}",
                          R"({"NodeNames":["\ud800"]})", R"({"NodeNames":["\x"]})", R"({"Pod":{"a":}})",
                          R"({"Pod":{}} trailing)", R"({"Pod" {}})", R"({"Unknown":tru})", R"({"NodeNames":[)"}) {
    EXPECT_FALSE(ParseExtenderArgs(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseExtenderArgs(" { } ").ok());
  EXPECT_TRUE(ParseExtenderArgs(R"({"NodeNames":[],"Unknown":[true,false,null,-1.5e3]})").ok());
}

}  // namespace
}  // namespace rackwise::k8s
