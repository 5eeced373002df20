// Philly trace converter; the rules are documented in rackwise/trace_philly.h.
#include "rackwise/trace_philly.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "trace_csv.h"

namespace rackwise {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// "YYYY-MM-DD HH:MM:SS" as seconds since 1970 (no time zone).
std::optional<int64_t> ParseTimestamp(std::string_view s) {
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](size_t pos, size_t len) { return trace_internal::ParseInt(s.substr(pos, len)); };
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 60 || *h < 0 || *mi < 0 || *se < 0) {
    return std::nullopt;
  }
  return DaysFromCivil(*y, static_cast<unsigned>(*mo), static_cast<unsigned>(*d)) * 86400 + *h * 3600 + *mi * 60 + *se;
}

struct Row {
  int64_t submit;
  TraceJob job;
};

}  // namespace

absl::StatusOr<std::vector<TraceJob>> ConvertPhillyTrace(std::string_view csv, std::string_view file,
                                                         const PhillyConvertParams& params, Diagnostics* diagnostics) {
  if (params.node_gpus < 1 || params.node_gpus > 64) return absl::InvalidArgumentError("node_gpus: must be 1..64");
  Diagnostics local;
  Diagnostics& diags = diagnostics ? *diagnostics : local;
  const size_t first = diags.size();
  const std::string file_name(file);
  auto error = [&](int line, std::string message) {
    if (diags.size() - first < 50) diags.push_back({file_name, line, std::move(message)});
  };
  int c_time = -1, c_duration = -1, c_gpus = -1, c_cluster = -1;
  size_t width = 0;
  bool have_header = false;
  std::vector<Row> rows;
  trace_internal::ForEachLine(csv, [&](int number, std::string_view line) {
    if (trace_internal::Trim(line).empty()) return;
    std::vector<std::string_view> f = trace_internal::SplitFields(trace_internal::Trim(line));
    if (!have_header) {
      have_header = true;
      width = f.size();
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "timestamp") c_time = static_cast<int>(i);
        if (f[i] == "duration") c_duration = static_cast<int>(i);
        if (f[i] == "num_gpus") c_gpus = static_cast<int>(i);
        if (f[i] == "cluster") c_cluster = static_cast<int>(i);
      }
      if (c_time < 0 || c_duration < 0 || c_gpus < 0) {
        error(number, "header: expected the Philly columns timestamp,duration,num_gpus[,gpu_time,cluster]");
      }
      return;
    }
    if (c_time < 0 || c_duration < 0 || c_gpus < 0) return;
    if (f.size() != width) {
      error(number, absl::StrCat("expected ", width, " fields, found ", f.size()));
      return;
    }
    if (!params.virtual_cluster.empty() && (c_cluster < 0 || f[c_cluster] != params.virtual_cluster)) return;
    Row row;
    std::optional<int64_t> t = ParseTimestamp(f[c_time]);
    std::optional<double> d = trace_internal::ParseDouble(f[c_duration]);
    std::optional<long long> g = trace_internal::ParseInt(f[c_gpus]);
    bool ok = true;
    if (!t) {
      error(number,
            absl::StrCat("field 'timestamp': expected YYYY-MM-DD HH:MM:SS (got '", std::string(f[c_time]), "')"));
      ok = false;
    }
    if (!d || *d < 0 || *d > 1e9) {
      error(number, absl::StrCat("field 'duration': expected seconds >= 0 (got '", std::string(f[c_duration]), "')"));
      ok = false;
    }
    if (!g || *g < 1 || *g > 100000) {
      error(number,
            absl::StrCat("field 'num_gpus': expected an integer 1..100000 (got '", std::string(f[c_gpus]), "')"));
      ok = false;
    }
    if (!ok) return;
    row.submit = *t;
    row.job.id = absl::StrCat("philly-", number);
    row.job.line = number;
    row.job.duration = std::max(1.0, std::ceil(*d));
    row.job.gpus = static_cast<int>(*g);
    if (row.job.gpus > params.node_gpus) {
      for (int k = params.node_gpus; k >= 1; --k) {
        if (row.job.gpus % k == 0) {
          row.job.gpus_per_node = k;
          break;
        }
      }
    }
    row.job.locality = Locality::kPreferred;
    rows.push_back(std::move(row));
  });
  if (!have_header) error(0, "empty file: expected the Philly header timestamp,duration,num_gpus,gpu_time,cluster");
  if (diags.size() > first) return absl::InvalidArgumentError(diags[first].ToString());
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.submit < b.submit; });
  if (params.max_jobs > 0 && rows.size() > params.max_jobs) rows.resize(params.max_jobs);
  std::vector<TraceJob> jobs;
  jobs.reserve(rows.size());
  const int64_t t0 = rows.empty() ? 0 : rows.front().submit;
  for (Row& r : rows) {
    r.job.submit = static_cast<double>(r.submit - t0);
    jobs.push_back(std::move(r.job));
  }
  return jobs;
}

}  // namespace rackwise
