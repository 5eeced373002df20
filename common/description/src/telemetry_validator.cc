// The rules of the `telemetry:` section. See telemetry_validator.h; negative files in tests/data/invalid/.
#include "telemetry_validator.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "rackwise/power_bounds.h"

namespace rackwise {
namespace {

constexpr double kMaxIntervalS = 3600;
constexpr double kMaxStaleAfterS = 86400;

bool IsLabelName(std::string_view s) {  // Prometheus: [a-zA-Z_][a-zA-Z0-9_]*
  if (s.empty() || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// http(s)://host[:port][/path], no spaces or control characters.
std::string UrlProblem(std::string_view url) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else {
    return "must start with http:// or https://";
  }
  for (char c : url)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return "must not contain spaces or control characters";
  if (rest.empty() || rest[0] == '/' || rest[0] == ':') return "has no host";
  if (url.size() > 2048) return "is longer than 2048 characters";
  return "";
}

class TelemetryChecker {
 public:
  TelemetryChecker(const v1::Telemetry& t, const FieldPathLines& lines, std::string_view file, Diagnostics* out)
      : t_(t), lines_(lines), file_(file), out_(out) {}

  void Run() {
    if (t_.prometheus_url().empty()) {
      Report("telemetry", "telemetry: missing 'prometheus_url' (e.g. http://prometheus.monitoring:9090)");
    } else if (std::string why = UrlProblem(t_.prometheus_url()); !why.empty()) {
      Report("telemetry.prometheus_url",
             absl::StrCat("telemetry: prometheus_url ", why, ", got '", t_.prometheus_url().substr(0, 200), "'"));
    }
    if (absl::StripAsciiWhitespace(t_.node_power_query()).empty())
      Report("telemetry", "telemetry: missing 'node_power_query' (e.g. sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE))");
    CheckLabel("node_label", t_.node_label(), false);
    const bool rack_query = !absl::StripAsciiWhitespace(t_.rack_power_query()).empty();
    CheckLabel("rack_label", t_.rack_label(), rack_query);
    if (!rack_query && !t_.rack_label().empty())
      Report("telemetry.rack_label", "telemetry: rack_label is set but rack_power_query is empty");
    const bool interval_ok = CheckRange("interval_s", t_.interval_s(), 1, kMaxIntervalS);
    if (CheckRange("stale_after_s", t_.stale_after_s(), 1, kMaxStaleAfterS) && interval_ok) {
      const double interval = t_.interval_s() > 0 ? t_.interval_s() : 15;
      const double stale = t_.stale_after_s() > 0 ? t_.stale_after_s() : 60;
      if (stale < interval)
        Report("telemetry.stale_after_s", absl::StrCat("telemetry: stale_after_s (", stale,
                                                       ") must not be shorter than interval_s (", interval, ")"));
    }
    if (absl::Status bad = CheckReclaimPct(t_.reclaim_pct()); !bad.ok())
      Report("telemetry.reclaim_pct", absl::StrCat("telemetry: reclaim_pct ", bad.message()));
    if (!v1::OverdrawAction_IsValid(t_.on_overdraw()))
      Report("telemetry.on_overdraw",
             absl::StrCat("telemetry: unknown on_overdraw value ", static_cast<int>(t_.on_overdraw())));
  }

 private:
  void Report(const std::string& path, std::string message) {
    out_->push_back({std::string(file_), lines_.Line(path), std::move(message)});
  }

  void CheckLabel(const std::string& field, const std::string& value, bool required) {
    const std::string path = absl::StrCat("telemetry.", field);
    if (lines_.Rejected(path)) return;
    if (value.empty()) {
      if (required)
        Report("telemetry", absl::StrCat("telemetry: missing '", field, "' (needed with rack_power_query)"));
      return;
    }
    if (!IsLabelName(value))
      Report(path,
             absl::StrCat("telemetry: ", field, " must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), got '",
                          value.substr(0, 200), "'"));
  }

  // 0 (absent) takes the default; otherwise the value must lie in [lo, hi]. Returns true when usable.
  bool CheckRange(const std::string& field, double value, double lo, double hi) {
    if (value == 0 && !lines_.Has(absl::StrCat("telemetry.", field))) return true;
    if (!std::isfinite(value) || value < lo || value > hi) {
      Report(absl::StrCat("telemetry.", field),
             absl::StrCat("telemetry: ", field, " must be between ", lo, " and ", hi, " seconds, got ", value));
      return false;
    }
    return true;
  }

  const v1::Telemetry& t_;
  const FieldPathLines& lines_;
  std::string_view file_;
  Diagnostics* out_;
};

}  // namespace

void CheckTelemetry(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                    Diagnostics* diagnostics) {
  if (!description.has_telemetry()) return;
  TelemetryChecker(description.telemetry(), lines, file, diagnostics).Run();
}

}  // namespace rackwise
