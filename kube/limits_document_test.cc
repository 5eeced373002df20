#include "limits_document.h"

#include <string>

#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace rackwise::k8s {
namespace {

LimitsDocument Sample() {
  LimitsDocument d;
  d.generation = 7;
  d.allocations.push_back({"pod/ml/a", 412'500, 600'000, {{"ml", "a", "u-a", "gpu001"}}});
  d.allocations.push_back(
      {"ml/PodGroup/g#0", 300'001, 300'001, {{"ml", "g-0", "u-g0", "gpu001"}, {"ml", "g-1", "u-g1", "gpu002"}}});
  d.allocations.push_back({"pod/ml/\"quoted\"\n", 1'000, 10'000'000, {{"ml", "\"quoted\"\n", "u", "gpu002"}}});
  return d;
}

TEST(LimitsDocumentTest, RoundTripsExactly) {
  const LimitsDocument d = Sample();
  const std::string body = EncodeLimitsDocument(d);
  EXPECT_TRUE(absl::StrContains(body, "\"watts_per_gpu\":412.5,\"declared_watts_per_gpu\":600,")) << body;
  EXPECT_TRUE(absl::StrContains(body, "\"watts_per_gpu\":300.001,")) << body;
  absl::StatusOr<LimitsDocument> back = ParseLimitsDocument(body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, d);
  absl::StatusOr<LimitsDocument> empty = ParseLimitsDocument(EncodeLimitsDocument({}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->allocations.empty());
}

TEST(LimitsDocumentTest, ForNodeKeepsOnlyItsPods) {
  const LimitsDocument mine = LimitsForNode(Sample(), "gpu002");
  EXPECT_EQ(mine.generation, 7u);
  ASSERT_EQ(mine.allocations.size(), 2u);
  EXPECT_EQ(mine.allocations[0].allocation, "ml/PodGroup/g#0");
  ASSERT_EQ(mine.allocations[0].pods.size(), 1u);
  EXPECT_EQ(mine.allocations[0].pods[0].name, "g-1");
  EXPECT_TRUE(LimitsForNode(Sample(), "gpu999").allocations.empty());
}

// Hostile and malformed bodies: a clear error naming the entry and field, never a crash or a partial document.
TEST(LimitsDocumentTest, RefusesMalformedInputNamingWhatIsWrong) {
  const std::string entry_head = R"({"generation":1,"allocations":[{"allocation":"a","pods":[],)";
  const std::pair<std::string, std::string> cases[] = {
      {"", "invalid JSON"},
      {"[]", "expected a JSON object"},
      {"{\"generation\":1", "invalid JSON"},
      {std::string(100000, '['), "nested deeper"},
      {R"({"allocations":[]})", "\"generation\" must be a non-negative integer"},
      {R"({"generation":-1,"allocations":[]})", "\"generation\" must be a non-negative integer"},
      {R"({"generation":1.5,"allocations":[]})", "\"generation\" must be a non-negative integer"},
      {R"({"generation":1,"allocations":{}})", "\"allocations\" must be an array"},
      {R"({"generation":1,"allocations":[7]})", "allocations[0]: must be an object"},
      {R"({"generation":1,"allocations":[{"pods":[]}]})", "allocations[0]: \"allocation\" must be a string"},
      {R"({"generation":1,"allocations":[{"allocation":"","pods":[]}]})", "\"allocation\" is empty"},
      {entry_head + R"("watts_per_gpu":"400","declared_watts_per_gpu":500}]})", "\"watts_per_gpu\" must be a number"},
      {entry_head + R"("watts_per_gpu":0.5,"declared_watts_per_gpu":500}]})", "\"watts_per_gpu\" is 0.5, outside"},
      {entry_head + R"("watts_per_gpu":1e300,"declared_watts_per_gpu":500}]})", "outside 1..10000 W"},
      {entry_head + R"("watts_per_gpu":400})", "invalid JSON"},
      {entry_head + R"("watts_per_gpu":400}]})", "\"declared_watts_per_gpu\" must be a number"},
      {R"({"generation":1,"allocations":[{"allocation":"a","watts_per_gpu":4,"declared_watts_per_gpu":5}]})",
       "\"pods\" must be an array"},
      {R"({"generation":1,"allocations":[{"allocation":"a","watts_per_gpu":4,"declared_watts_per_gpu":5,)"
       R"("pods":[{"namespace":"ml","name":"x","uid":"u"}]}]})",
       "allocations[0].pods[0]: \"node\" must be a string"},
      {R"({"generation":1,"allocations":[{"allocation":"a","watts_per_gpu":4,"declared_watts_per_gpu":5,)"
       R"("pods":["ml/x"]}]})",
       "allocations[0].pods[0]: a pod must be an object"},
  };
  for (const auto& [body, want] : cases) {
    absl::StatusOr<LimitsDocument> d = ParseLimitsDocument(body);
    ASSERT_FALSE(d.ok()) << body.substr(0, 200);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(d.status().message(), want)) << d.status() << "\nwant: " << want;
    EXPECT_TRUE(absl::StartsWith(d.status().message(), "limits document: ")) << d.status();
  }
}

// Random byte flips of a valid document: every answer is a document or an InvalidArgument.
TEST(LimitsDocumentTest, SurvivesCorruptedBodies) {
  const std::string body = EncodeLimitsDocument(Sample());
  uint32_t seed = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string bad = body;
    for (int flips = 0; flips < 1 + round % 4; ++flips) {
      seed = seed * 1664525u + 1013904223u;
      bad[seed % bad.size()] = static_cast<char>(seed >> 24);
    }
    absl::StatusOr<LimitsDocument> d = ParseLimitsDocument(bad);
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << d.status();
    }
  }
}

}  // namespace
}  // namespace rackwise::k8s
