// Parsing Prometheus answers: the good shape, and a clear error (never a crash or a silent zero) for every
// malformed one, including random mutations of a good answer.
#include "prometheus_answer.h"

#include <gtest/gtest.h>

#include <random>

namespace rackwise::telemetry {
namespace {

constexpr char kGood[] = R"({"status":"success","data":{"resultType":"vector","result":[)"
                         R"({"metric":{"Hostname":"gpu001"},"value":[1700000000.5,"2800.25"]},)"
                         R"({"metric":{"Hostname":"gpu002"},"value":[1700000001,"NaN"]}]}})";

TEST(ParseQueryAnswerTest, ReadsNamesWattsAndAges) {
  absl::StatusOr<std::vector<PowerReading>> r = ParseQueryAnswer(kGood, "Hostname", 1700000010);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "gpu001");
  EXPECT_DOUBLE_EQ((*r)[0].watts, 2800.25);
  EXPECT_DOUBLE_EQ((*r)[0].age_s, 9.5);
  EXPECT_TRUE(std::isnan((*r)[1].watts));  // passed on: the core ignores it and says so
  r = ParseQueryAnswer(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "Hostname", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(ParseQueryAnswerTest, EveryMalformedAnswerHasItsOwnError) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {"", "not JSON"},
      {"<html>", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"data":{}})", "no status"},
      {R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})",
       "status error: parse error at char 4"},
      {R"({"status":"success"})", "no data"},
      {R"({"status":"success","data":{"result":[]}})", "no resultType"},
      {R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})", "resultType is scalar"},
      {R"({"status":"success","data":{"resultType":"vector","result":{}}})", "no result list"},
      {R"({"status":"success","data":{"resultType":"vector","result":[7]}})", "result 0 is not an object"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"2"]}]}})", "no metric labels"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"a"},"value":[1,"2"]}]}})",
       "has no label 'Hostname'"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"a"}}]}})",
       "no [timestamp, value] pair"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"a"},"value":["1","2"]}]}})",
       "timestamp is not a number"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"a"},"value":[1,2]}]}})",
       "not a string"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"a"},"value":[1,"12W"]}]}})",
       "'12W' is not a number"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<PowerReading>> r = ParseQueryAnswer(c.body, "Hostname", 0);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << c.body << " -> " << r.status();
  }
}

TEST(ParseQueryAnswerTest, RandomMutationsNeverCrashAndNeverInventReadings) {
  std::mt19937 rng(11);
  const std::string good = kGood;
  const std::string alphabet = "{}[]\",:0123456789.eE+-aNnulltrue \\";
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s.erase(at, 1 + rng() % 8); break;
        case 1: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: s[at] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    absl::StatusOr<std::vector<PowerReading>> r = ParseQueryAnswer(s, "Hostname", 1700000010);
    if (!r.ok()) {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
      continue;
    }
    for (const PowerReading& p : *r) EXPECT_FALSE(p.name.empty()) << s;  // every reading names its node
  }
  EXPECT_GT(errors, 10000);
}

}  // namespace
}  // namespace rackwise::telemetry
