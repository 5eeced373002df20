// The trace CSV: reading with a diagnostic per problem, and writing.
#include "rackwise/trace.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rackwise/power_bounds.h"
#include "rackwise/preemption.h"
#include "trace_csv.h"

namespace rackwise {

using trace_internal::ParseDouble;
using trace_internal::ParseInt;
using trace_internal::SplitFields;

namespace {

enum Column { kId, kSubmit, kDuration, kGpus, kGpusPerNode, kLocality, kWatts, kMeasured, kPriority, kColumns };
constexpr std::array<const char*, kColumns> kNames = {"id",
                                                      "submit",
                                                      "duration",
                                                      "gpus",
                                                      "gpus_per_node",
                                                      "locality",
                                                      "watts_per_gpu",
                                                      kTraceMeasuredColumn,
                                                      kTracePriorityColumn};
// A job larger than this is certainly a typo (and would overflow GPU arithmetic downstream).
constexpr long long kMaxJobGpus = 1'000'000;

// Reads a trace line by line: the first line that is neither blank nor a comment is the header, which names the
// columns; each later one is a job, kept only if every field of it is valid. Each problem is a diagnostic.
class TraceReader {
 public:
  TraceReader(std::string_view file, Diagnostics* diagnostics, size_t max_diagnostics)
      : file_(file), diags_(*diagnostics), first_(diagnostics->size()), max_(max_diagnostics) {
    column_.fill(-1);
  }

  void Line(int number, std::string_view line) {
    std::string_view trimmed = trace_internal::Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') return;
    std::vector<std::string_view> fields = SplitFields(trimmed);
    if (!have_header_) {
      Header(number, fields);
    } else if (fields.size() != width_) {
      Error(number, absl::StrFormat("expected %d fields, found %d", width_, fields.size()));
    } else if (std::optional<TraceJob> job = Job(number, fields)) {
      jobs_.push_back(*std::move(job));
    }
  }

  absl::StatusOr<std::vector<TraceJob>> Finish() && {
    if (!have_header_) Error(0, absl::StrCat("empty trace: expected the header ", kTraceHeader));
    if (diags_.size() > first_) return absl::InvalidArgumentError(diags_[first_].ToString());
    return std::move(jobs_);
  }

 private:
  void Error(int line, std::string message) {
    if (diags_.size() - first_ < max_) diags_.push_back({file_, line, std::move(message)});
  }

  void Header(int number, const std::vector<std::string_view>& fields) {
    have_header_ = true;
    width_ = fields.size();
    for (size_t i = 0; i < fields.size(); ++i) {
      bool known = false;
      for (int c = 0; c < kColumns; ++c) {
        if (fields[i] != kNames[c]) continue;
        if (column_[c] >= 0) Error(number, absl::StrCat("header: column '", kNames[c], "' appears twice"));
        column_[c] = static_cast<int>(i);
        known = true;
      }
      if (!known)
        Error(number, absl::StrCat("header: unknown column '", std::string(fields[i]), "' (expected ", kTraceHeader,
                                   "[,", kTraceMeasuredColumn, "][,", kTracePriorityColumn, "])"));
    }
    for (int c : {kId, kSubmit, kDuration, kGpus}) {
      if (column_[c] < 0) Error(number, absl::StrCat("header: missing column '", kNames[c], "'"));
    }
  }

  // The job on line `number`, or nothing (each bad field said) when any field is bad.
  std::optional<TraceJob> Job(int number, const std::vector<std::string_view>& fields) {
    auto field = [&](Column c) -> std::string_view { return column_[c] < 0 ? std::string_view() : fields[column_[c]]; };
    bool ok = true;
    auto bad = [&](Column c, std::string what) {
      Error(number, absl::StrCat("field '", kNames[c], "': ", what, " (got '", std::string(field(c)), "')"));
      ok = false;
    };
    TraceJob job;
    job.line = number;
    job.id = std::string(field(kId));
    if (job.id.empty()) {
      bad(kId, "must not be empty");
    } else if (!ids_.insert(job.id).second) {
      bad(kId, "duplicate id");
    }
    std::optional<double> submit = ParseDouble(field(kSubmit));
    if (!submit || *submit < 0) {
      bad(kSubmit, "must be a number of seconds >= 0");
    } else {
      job.submit = *submit;
    }
    std::optional<double> duration = ParseDouble(field(kDuration));
    if (!duration || *duration <= 0) {
      bad(kDuration, "must be a number of seconds > 0");
    } else {
      job.duration = *duration;
    }
    std::optional<long long> gpus = ParseInt(field(kGpus));
    if (!gpus || *gpus < 1 || *gpus > kMaxJobGpus) {
      bad(kGpus, absl::StrCat("must be an integer 1..", kMaxJobGpus));
    } else {
      job.gpus = static_cast<int>(*gpus);
    }
    if (!field(kGpusPerNode).empty()) {
      std::optional<long long> k = ParseInt(field(kGpusPerNode));
      if (!k || *k < 0 || *k > 64) {
        bad(kGpusPerNode, "must be an integer 0..64 (0: any split)");
      } else if (*k > 0 && gpus && *gpus >= 1 && *gpus % *k != 0) {
        bad(kGpusPerNode, absl::StrCat("must divide gpus (", *gpus, ")"));
      } else {
        job.gpus_per_node = static_cast<int>(*k);
      }
    }
    if (!field(kLocality).empty()) {
      job.locality = ParseLocality(field(kLocality));
      if (!job.locality) bad(kLocality, "must be required, preferred or none (or empty)");
    }
    ReadPowerAndPriority(field(kWatts), field(kMeasured), field(kPriority), &job, bad);
    if (!ok) return std::nullopt;
    return job;
  }

  // The optional columns: declared and measured watts per GPU, and the preemption priority.
  template <typename Bad>
  static void ReadPowerAndPriority(std::string_view watts, std::string_view measured, std::string_view priority,
                                   TraceJob* job, Bad& bad) {
    if (!watts.empty()) {
      std::optional<double> w = ParseDouble(watts);
      if (!w || !CheckWattsPerGpu(*w).ok()) {
        bad(kWatts,
            absl::StrCat("must be watts ", kMinWattsPerGpu, "..", kMaxWattsPerGpu, " (0 or empty: the node type's)"));
      } else {
        job->watts_per_gpu = *w;
      }
    }
    // A measurement is what a GPU drew, never "nothing": 0 is refused rather than read as "not measured".
    if (!measured.empty()) {
      std::optional<double> w = ParseDouble(measured);
      if (!w || *w <= 0 || !CheckWattsPerGpu(*w).ok()) {
        bad(kMeasured, absl::StrCat("must be the watts one GPU drew, ", kMinWattsPerGpu, "..", kMaxWattsPerGpu,
                                    " (empty: not measured)"));
      } else {
        job->measured_watts_per_gpu = *w;
      }
    }
    if (!priority.empty()) {
      std::optional<long long> p = ParseInt(priority);
      if (!p || *p < -kMaxPreemptionPriority || *p > kMaxPreemptionPriority) {
        bad(kPriority, absl::StrCat("must be an integer within +-", kMaxPreemptionPriority, " (empty: 0)"));
      } else {
        job->priority = *p;
      }
    }
  }

  const std::string file_;
  Diagnostics& diags_;
  const size_t first_;  // diagnostics before this trace's
  const size_t max_;
  std::array<int, kColumns> column_;  // each column's position in a line; -1: absent
  size_t width_ = 0;
  bool have_header_ = false;
  absl::flat_hash_set<std::string> ids_;
  std::vector<TraceJob> jobs_;
};

}  // namespace

absl::StatusOr<std::vector<TraceJob>> ParseTrace(std::string_view csv, std::string_view file, Diagnostics* diagnostics,
                                                 size_t max_diagnostics) {
  Diagnostics local;
  TraceReader reader(file, diagnostics ? diagnostics : &local, max_diagnostics);
  trace_internal::ForEachLine(csv, [&](int number, std::string_view line) { reader.Line(number, line); });
  return std::move(reader).Finish();
}

absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path, Diagnostics* diagnostics) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Diagnostic d{path, 0, "cannot open the trace file"};
    if (diagnostics) diagnostics->push_back(d);
    return absl::NotFoundError(d.ToString());
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseTrace(buffer.str(), path, diagnostics);
}

std::string TraceToCsv(const std::vector<TraceJob>& jobs) {
  // Traces without measurements keep the seven columns that every earlier release wrote and read.
  const bool measured =
      std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.measured_watts_per_gpu > 0; });
  const bool prioritised = std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.priority != 0; });
  std::string out = absl::StrCat(kTraceHeader, measured ? "," : "", measured ? kTraceMeasuredColumn : "",
                                 prioritised ? "," : "", prioritised ? kTracePriorityColumn : "", "\n");
  for (const TraceJob& j : jobs) {
    absl::StrAppend(&out, j.id, ",", absl::StrFormat("%.10g", j.submit), ",", absl::StrFormat("%.10g", j.duration), ",",
                    j.gpus, ",", j.gpus_per_node, ",", j.locality ? LocalityName(*j.locality) : "", ",");
    if (j.watts_per_gpu > 0) absl::StrAppend(&out, absl::StrFormat("%.10g", j.watts_per_gpu));
    if (measured) out += ',';
    if (j.measured_watts_per_gpu > 0) absl::StrAppend(&out, absl::StrFormat("%.10g", j.measured_watts_per_gpu));
    if (prioritised) absl::StrAppend(&out, ",", j.priority);
    out += '\n';
  }
  return out;
}

}  // namespace rackwise
