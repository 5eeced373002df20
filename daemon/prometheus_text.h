// The one writer of the Prometheus text exposition format (/metrics, and the .prom files a textfile collector
// reads) for every daemon and face: metric headers and escaped label values.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace rackwise::daemon {

// "# HELP name help\n# TYPE name type\n"; `type` is gauge, counter or histogram.
inline void MetricHeader(std::string* out, absl::string_view name, absl::string_view help, absl::string_view type) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}
inline void Gauge(std::string* out, absl::string_view name, absl::string_view help) {
  MetricHeader(out, name, help, "gauge");
}
inline void Counter(std::string* out, absl::string_view name, absl::string_view help) {
  MetricHeader(out, name, help, "counter");
}

// A label value with backslash, double quote and newline escaped.
inline std::string Label(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out.append("\\n");
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace rackwise::daemon
