// Helpers for writing the Prometheus text exposition format (/metrics).
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace rackwise::k8s {

// "# HELP name help\n# TYPE name gauge\n"
inline void Gauge(std::string* out, absl::string_view name, absl::string_view help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n");
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

}  // namespace rackwise::k8s
