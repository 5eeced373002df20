// Tests for the trace CSV reader/writer, the seeded generator and the Philly converter.
#include <gtest/gtest.h>

#include <numeric>

#include "rackwise/trace.h"
#include "rackwise/trace_generator.h"
#include "rackwise/trace_philly.h"

namespace rackwise {
namespace {

TEST(TraceCsvTest, ParsesDefaultsAndAnyColumnOrder) {
  Diagnostics d;
  auto jobs = ParseTrace(
      "# a comment\n"
      "gpus,id,submit,duration,locality,gpus_per_node,watts_per_gpu\n"
      "16,a,0,3600,required,8,500\n"
      "\n"
      "1,b,12.5,60,,,\r\n",
      "t.csv", &d);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "a");
  EXPECT_EQ((*jobs)[0].gpus, 16);
  EXPECT_EQ((*jobs)[0].gpus_per_node, 8);
  EXPECT_EQ((*jobs)[0].locality, Locality::kRequired);
  EXPECT_DOUBLE_EQ((*jobs)[0].watts_per_gpu, 500);
  EXPECT_EQ((*jobs)[0].line, 3);
  EXPECT_DOUBLE_EQ((*jobs)[1].submit, 12.5);
  EXPECT_FALSE((*jobs)[1].locality.has_value());
  EXPECT_EQ((*jobs)[1].gpus_per_node, 0);
}

TEST(TraceCsvTest, ReportsEveryProblemWithLineAndField) {
  Diagnostics d;
  auto jobs = ParseTrace(std::string(kTraceHeader) +
                             "\n"
                             "a,0,10,8,8,preferred,\n"
                             "a,0,10,8,8,,\n"      // duplicate id
                             "b,-1,10,8,,,\n"      // negative submit
                             "c,0,0,8,,,\n"        // zero duration
                             "d,0,10,12,8,,\n"     // 8 does not divide 12
                             "e,0,10,x,,,\n"       // not a number
                             "f,0,10,8,,close,\n"  // bad locality
                             "g,0,10,8\n",         // short row
                         "bad.csv", &d);
  ASSERT_FALSE(jobs.ok());
  ASSERT_EQ(d.size(), 7u);
  EXPECT_EQ(d[0].file, "bad.csv");
  EXPECT_EQ(d[0].line, 3);
  EXPECT_NE(d[0].message.find("field 'id'"), std::string::npos);
  EXPECT_EQ(d[1].line, 4);
  EXPECT_NE(d[1].message.find("field 'submit'"), std::string::npos);
  EXPECT_NE(d[2].message.find("field 'duration'"), std::string::npos);
  EXPECT_NE(d[3].message.find("field 'gpus_per_node'"), std::string::npos);
  EXPECT_NE(d[4].message.find("field 'gpus'"), std::string::npos);
  EXPECT_NE(d[5].message.find("field 'locality'"), std::string::npos);
  EXPECT_EQ(d[6].line, 9);
}

TEST(TraceCsvTest, RejectsBadHeaderAndEmptyFile) {
  Diagnostics d;
  EXPECT_FALSE(ParseTrace("id,submit,gpus,colour\n", "h.csv", &d).ok());
  ASSERT_GE(d.size(), 2u);  // unknown column, missing duration
  EXPECT_EQ(d[0].line, 1);
  d.clear();
  EXPECT_FALSE(ParseTrace("", "e.csv", &d).ok());
  ASSERT_EQ(d.size(), 1u);
}

TEST(TraceCsvTest, RoundTrips) {
  TraceGeneratorParams p;
  p.mix = TraceMix::kResearch;
  p.jobs = 500;
  p.seed = 7;
  p.cluster_gpus = 512;
  p.watts_fraction = 0.3;
  p.watts_per_gpu = 450;
  auto jobs = GenerateTrace(p);
  ASSERT_TRUE(jobs.ok());
  auto back = ParseTrace(TraceToCsv(*jobs), "rt.csv", nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), jobs->size());
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*back)[i].id, (*jobs)[i].id);
    EXPECT_EQ((*back)[i].submit, (*jobs)[i].submit);
    EXPECT_EQ((*back)[i].duration, (*jobs)[i].duration);
    EXPECT_EQ((*back)[i].gpus, (*jobs)[i].gpus);
    EXPECT_EQ((*back)[i].gpus_per_node, (*jobs)[i].gpus_per_node);
    EXPECT_EQ((*back)[i].locality, (*jobs)[i].locality);
    EXPECT_EQ((*back)[i].watts_per_gpu, (*jobs)[i].watts_per_gpu);
  }
}

TEST(TraceCsvTest, MeasuredWattsColumnIsOptionalAndEmptyMeansNotMeasured) {
  auto jobs = ParseTrace(std::string(kTraceHeader) +
                             ",measured_watts_per_gpu\n"
                             "a,0,10,8,8,,500,412.5\n"
                             "b,0,10,8,8,,,\n",
                         "m.csv", nullptr);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_DOUBLE_EQ((*jobs)[0].measured_watts_per_gpu, 412.5);
  EXPECT_DOUBLE_EQ((*jobs)[1].measured_watts_per_gpu, 0);
  auto plain = ParseTrace(std::string(kTraceHeader) + "\na,0,10,8,8,,\n", "p.csv", nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_DOUBLE_EQ((*plain)[0].measured_watts_per_gpu, 0);
  // Without measurements the writer keeps the seven columns earlier releases read.
  EXPECT_EQ(TraceToCsv(*plain).substr(0, TraceToCsv(*plain).find('\n')), kTraceHeader);
}

TEST(TraceCsvTest, MeasuredWattsMustBeFinitePositiveAndWithinTheGpuBounds) {
  Diagnostics d;
  auto jobs = ParseTrace(
      "id,submit,duration,gpus,measured_watts_per_gpu\n"
      "a,0,10,8,0\n"
      "b,0,10,8,-3\n"
      "c,0,10,8,nan\n"
      "d,0,10,8,inf\n"
      "e,0,10,8,20000\n"
      "f,0,10,8,watts\n"
      "g,0,10,8,700\n",
      "bad.csv", &d);
  ASSERT_FALSE(jobs.ok());
  ASSERT_EQ(d.size(), 6u);
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].file, "bad.csv");
    EXPECT_EQ(d[i].line, static_cast<int>(i) + 2);
    EXPECT_NE(d[i].message.find("field 'measured_watts_per_gpu'"), std::string::npos) << d[i].message;
    EXPECT_NE(d[i].message.find("1..10000"), std::string::npos) << d[i].message;
  }
  EXPECT_NE(d[0].ToString().find("bad.csv:2:"), std::string::npos) << d[0].ToString();
}

TEST(TraceCsvTest, MeasuredWattsRoundTrip) {
  TraceGeneratorParams p;
  p.jobs = 50;
  p.cluster_gpus = 512;
  auto jobs = GenerateTrace(p);
  ASSERT_TRUE(jobs.ok());
  for (size_t i = 0; i < jobs->size(); i += 2) (*jobs)[i].measured_watts_per_gpu = 300 + 7.25 * i;
  auto back = ParseTrace(TraceToCsv(*jobs), "rt.csv", nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), jobs->size());
  for (size_t i = 0; i < jobs->size(); ++i)
    EXPECT_EQ((*back)[i].measured_watts_per_gpu, (*jobs)[i].measured_watts_per_gpu) << i;
}

double MeanGpus(const std::vector<TraceJob>& jobs) {
  double s = 0;
  for (const TraceJob& j : jobs) s += j.gpus;
  return s / jobs.size();
}

TEST(TraceGeneratorTest, DeterministicPerSeed) {
  TraceGeneratorParams p;
  p.jobs = 200;
  p.cluster_gpus = 1024;
  p.seed = 42;
  auto a = GenerateTrace(p), b = GenerateTrace(p);
  p.seed = 43;
  auto c = GenerateTrace(p);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(TraceToCsv(*a), TraceToCsv(*b));
  EXPECT_NE(TraceToCsv(*a), TraceToCsv(*c));
}

TEST(TraceGeneratorTest, MixesDifferAsDocumented) {
  TraceGeneratorParams p;
  p.jobs = 5000;
  p.cluster_gpus = 4096;
  p.seed = 1;
  p.mix = TraceMix::kTraining;
  auto training = GenerateTrace(p);
  p.mix = TraceMix::kResearch;
  auto research = GenerateTrace(p);
  p.mix = TraceMix::kInference;
  auto inference = GenerateTrace(p);
  ASSERT_TRUE(training.ok() && research.ok() && inference.ok());
  EXPECT_GT(MeanGpus(*training), MeanGpus(*research));
  EXPECT_GT(MeanGpus(*research), MeanGpus(*inference));
  for (const TraceJob& j : *training) {
    EXPECT_GE(j.gpus, 8);
    EXPECT_EQ(j.gpus_per_node, j.gpus > 8 ? 8 : 0);
    EXPECT_GE(j.duration, 600);
    EXPECT_LE(j.duration, 7 * 86400);
  }
  for (const TraceJob& j : *inference) {
    EXPECT_LE(j.gpus, 8);
    EXPECT_NE(j.locality, Locality::kRequired);
  }
  // Submits never go back in time.
  for (size_t i = 1; i < research->size(); ++i) EXPECT_GE((*research)[i].submit, (*research)[i - 1].submit);
}

TEST(TraceGeneratorTest, ArrivalRateGivesTheOfferedLoad) {
  TraceGeneratorParams p;
  p.mix = TraceMix::kResearch;
  p.jobs = 20000;
  p.cluster_gpus = 1024;
  p.load = 0.8;
  auto jobs = GenerateTrace(p);
  ASSERT_TRUE(jobs.ok());
  double gpu_seconds = 0;
  for (const TraceJob& j : *jobs) gpu_seconds += j.gpus * j.duration;
  const double span = jobs->back().submit - jobs->front().submit;
  EXPECT_NEAR(gpu_seconds / (1024 * span), 0.8, 0.05);
}

TEST(TraceGeneratorTest, SizesFitTheCluster) {
  TraceGeneratorParams p;
  p.mix = TraceMix::kTraining;
  p.jobs = 1000;
  p.cluster_gpus = 100;
  auto jobs = GenerateTrace(p);
  ASSERT_TRUE(jobs.ok());
  for (const TraceJob& j : *jobs) EXPECT_LE(j.gpus, 64);
  p.cluster_gpus = 4;  // smaller than any training job
  EXPECT_FALSE(GenerateTrace(p).ok());
}

constexpr char kPhilly[] =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
    "2017-10-09 06:13:03,2951.5,16,47224.0,6214e9\n"
    "2017-10-08 23:59:59,10.0,12,120.0,6214e9\n"
    "2017-10-09 06:13:03,0.0,24,0.0,11cb48\n"
    "\n";

TEST(PhillyTest, SortsConvertsAndSplitsNodes) {
  Diagnostics d;
  auto jobs = ConvertPhillyTrace(kPhilly, "philly.csv", {}, &d);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].id, "philly-4");  // the earliest row, from line 4
  EXPECT_EQ((*jobs)[0].submit, 0);
  EXPECT_EQ((*jobs)[0].gpus, 12);
  EXPECT_EQ((*jobs)[0].gpus_per_node, 6);
  EXPECT_EQ((*jobs)[1].id, "philly-3");                  // ties keep file order
  EXPECT_EQ((*jobs)[1].submit, 6 * 3600 + 13 * 60 + 4);  // across midnight
  EXPECT_EQ((*jobs)[1].duration, 2952);
  EXPECT_EQ((*jobs)[1].gpus_per_node, 8);
  EXPECT_EQ((*jobs)[2].id, "philly-5");
  EXPECT_EQ((*jobs)[2].duration, 1);  // zero rounds up to one second
  EXPECT_EQ((*jobs)[2].gpus_per_node, 8);
  EXPECT_EQ((*jobs)[3].gpus_per_node, 0);
  EXPECT_EQ((*jobs)[3].locality, Locality::kPreferred);
  // The output is a valid trace.
  EXPECT_TRUE(ParseTrace(TraceToCsv(*jobs), "out.csv", nullptr).ok());
}

TEST(PhillyTest, FiltersAndLimits) {
  PhillyConvertParams p;
  p.virtual_cluster = "6214e9";
  p.node_gpus = 4;
  auto jobs = ConvertPhillyTrace(kPhilly, "philly.csv", p, nullptr);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].gpus_per_node, 4);  // 12 on 4-GPU trays
  EXPECT_EQ((*jobs)[1].gpus_per_node, 4);
  p = {};
  p.max_jobs = 1;
  jobs = ConvertPhillyTrace(kPhilly, "philly.csv", p, nullptr);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);
}

TEST(PhillyTest, ReportsBadRows) {
  Diagnostics d;
  auto jobs = ConvertPhillyTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-13-09 07:01:55,66.0,1,66.0,a\n"
      "2017-10-09 07:01:55,abc,1,66.0,a\n"
      "2017-10-09 07:01:55,6,0,66.0,a\n",
      "p.csv", {}, &d);
  ASSERT_FALSE(jobs.ok());
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].line, 2);
  EXPECT_NE(d[0].message.find("timestamp"), std::string::npos);
  EXPECT_NE(d[1].message.find("duration"), std::string::npos);
  EXPECT_NE(d[2].message.find("num_gpus"), std::string::npos);
  d.clear();
  EXPECT_FALSE(ConvertPhillyTrace("id,submit\n1,2\n", "x.csv", {}, &d).ok());
}

}  // namespace
}  // namespace rackwise

namespace rackwise {
namespace {

TEST(TraceCsvTest, PriorityColumnIsOptionalIntegerAndRoundTrips) {
  auto jobs = ParseTrace("priority,id,submit,duration,gpus\n5,a,0,10,8\n,b,0,10,8\n-2,c,1,10,4\n", "p.csv", nullptr);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].priority, 5);
  EXPECT_EQ((*jobs)[1].priority, 0);
  EXPECT_EQ((*jobs)[2].priority, -2);
  const std::string csv = TraceToCsv(*jobs);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), std::string(kTraceHeader) + ",priority");
  auto back = ParseTrace(csv, "rt.csv", nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < jobs->size(); ++i) EXPECT_EQ((*back)[i].priority, (*jobs)[i].priority);
  Diagnostics d;
  auto bad = ParseTrace("id,submit,duration,gpus,priority\na,0,10,8,high\nb,0,10,8,1.5\nc,0,10,8,99999999999999\n",
                        "bad.csv", &d);
  ASSERT_FALSE(bad.ok());
  ASSERT_EQ(d.size(), 3u);
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].line, static_cast<int>(i) + 2);
    EXPECT_NE(d[i].message.find("field 'priority'"), std::string::npos) << d[i].message;
  }
}

}  // namespace
}  // namespace rackwise
