// The trace CSV: reading with a diagnostic per problem, and writing.
#include "rackwise/trace.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

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

}  // namespace

absl::StatusOr<std::vector<TraceJob>> ParseTrace(std::string_view csv, std::string_view file, Diagnostics* diagnostics,
                                                 size_t max_diagnostics) {
  Diagnostics local;
  Diagnostics& diags = diagnostics ? *diagnostics : local;
  const size_t first = diags.size();
  const std::string file_name(file);
  auto error = [&](int line, std::string message) {
    if (diags.size() - first < max_diagnostics) diags.push_back({file_name, line, std::move(message)});
  };
  std::vector<TraceJob> jobs;
  std::array<int, kColumns> column;
  column.fill(-1);
  size_t width = 0;
  bool have_header = false;
  absl::flat_hash_set<std::string> ids;
  trace_internal::ForEachLine(csv, [&](int number, std::string_view line) {
    std::string_view trimmed = trace_internal::Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') return;
    std::vector<std::string_view> fields = SplitFields(trimmed);
    if (!have_header) {
      have_header = true;
      width = fields.size();
      for (size_t i = 0; i < fields.size(); ++i) {
        bool known = false;
        for (int c = 0; c < kColumns; ++c) {
          if (fields[i] != kNames[c]) continue;
          if (column[c] >= 0) error(number, absl::StrCat("header: column '", kNames[c], "' appears twice"));
          column[c] = static_cast<int>(i);
          known = true;
        }
        if (!known)
          error(number, absl::StrCat("header: unknown column '", std::string(fields[i]), "' (expected ", kTraceHeader,
                                     "[,", kTraceMeasuredColumn, "][,", kTracePriorityColumn, "])"));
      }
      for (int c : {kId, kSubmit, kDuration, kGpus}) {
        if (column[c] < 0) error(number, absl::StrCat("header: missing column '", kNames[c], "'"));
      }
      return;
    }
    if (fields.size() != width) {
      error(number, absl::StrFormat("expected %d fields, found %d", width, fields.size()));
      return;
    }
    auto field = [&](Column c) -> std::string_view { return column[c] < 0 ? std::string_view() : fields[column[c]]; };
    auto bad = [&](Column c, std::string what) {
      error(number, absl::StrCat("field '", kNames[c], "': ", what, " (got '", std::string(field(c)), "')"));
    };
    TraceJob job;
    job.line = number;
    bool ok = true;
    job.id = std::string(field(kId));
    if (job.id.empty()) {
      bad(kId, "must not be empty");
      ok = false;
    } else if (!ids.insert(job.id).second) {
      bad(kId, "duplicate id");
      ok = false;
    }
    std::optional<double> submit = ParseDouble(field(kSubmit));
    if (!submit || *submit < 0) {
      bad(kSubmit, "must be a number of seconds >= 0");
      ok = false;
    } else {
      job.submit = *submit;
    }
    std::optional<double> duration = ParseDouble(field(kDuration));
    if (!duration || *duration <= 0) {
      bad(kDuration, "must be a number of seconds > 0");
      ok = false;
    } else {
      job.duration = *duration;
    }
    std::optional<long long> gpus = ParseInt(field(kGpus));
    if (!gpus || *gpus < 1 || *gpus > kMaxJobGpus) {
      bad(kGpus, absl::StrCat("must be an integer 1..", kMaxJobGpus));
      ok = false;
    } else {
      job.gpus = static_cast<int>(*gpus);
    }
    if (!field(kGpusPerNode).empty()) {
      std::optional<long long> k = ParseInt(field(kGpusPerNode));
      if (!k || *k < 0 || *k > 64) {
        bad(kGpusPerNode, "must be an integer 0..64 (0: any split)");
        ok = false;
      } else if (*k > 0 && gpus && *gpus >= 1 && *gpus % *k != 0) {
        bad(kGpusPerNode, absl::StrCat("must divide gpus (", *gpus, ")"));
        ok = false;
      } else {
        job.gpus_per_node = static_cast<int>(*k);
      }
    }
    if (!field(kLocality).empty()) {
      job.locality = ParseLocality(field(kLocality));
      if (!job.locality) {
        bad(kLocality, "must be required, preferred or none (or empty)");
        ok = false;
      }
    }
    if (!field(kWatts).empty()) {
      std::optional<double> w = ParseDouble(field(kWatts));
      if (!w || !CheckWattsPerGpu(*w).ok()) {
        bad(kWatts,
            absl::StrCat("must be watts ", kMinWattsPerGpu, "..", kMaxWattsPerGpu, " (0 or empty: the node type's)"));
        ok = false;
      } else {
        job.watts_per_gpu = *w;
      }
    }
    // A measurement is what a GPU drew, never "nothing": 0 is refused rather than read as "not measured".
    if (!field(kMeasured).empty()) {
      std::optional<double> w = ParseDouble(field(kMeasured));
      if (!w || *w <= 0 || !CheckWattsPerGpu(*w).ok()) {
        bad(kMeasured, absl::StrCat("must be the watts one GPU drew, ", kMinWattsPerGpu, "..", kMaxWattsPerGpu,
                                    " (empty: not measured)"));
        ok = false;
      } else {
        job.measured_watts_per_gpu = *w;
      }
    }
    if (!field(kPriority).empty()) {
      std::optional<long long> p = ParseInt(field(kPriority));
      if (!p || *p < -kMaxPreemptionPriority || *p > kMaxPreemptionPriority) {
        bad(kPriority, absl::StrCat("must be an integer within +-", kMaxPreemptionPriority, " (empty: 0)"));
        ok = false;
      } else {
        job.priority = *p;
      }
    }
    if (ok) jobs.push_back(std::move(job));
  });
  if (!have_header) error(0, absl::StrCat("empty trace: expected the header ", kTraceHeader));
  if (diags.size() > first) return absl::InvalidArgumentError(diags[first].ToString());
  return jobs;
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
