// Slurm configuration syntax; see slurm_config_file.h.
#include "slurm_config_file.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rackwise::adopt {
namespace {

// One logical line: physical lines joined where one ends in `\`, comments cut. Returns the text and the number
// of physical lines consumed.
std::string NextLogicalLine(std::string_view text, size_t* pos, int* consumed) {
  std::string logical;
  *consumed = 0;
  while (*pos < text.size()) {
    size_t end = text.find('\n', *pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view physical = text.substr(*pos, end - *pos);
    *pos = end + 1;
    ++*consumed;
    if (!physical.empty() && physical.back() == '\r') physical.remove_suffix(1);
    std::string cut;
    bool commented = false;
    for (size_t i = 0; i < physical.size(); ++i) {
      if (physical[i] == '\\' && i + 1 < physical.size() && physical[i + 1] == '#') {
        cut += '#';
        ++i;
      } else if (physical[i] == '#') {
        commented = true;
        break;
      } else {
        cut += physical[i];
      }
    }
    bool continues = !commented && !cut.empty() && cut.back() == '\\';
    if (!continues) {
      logical += cut;
      break;
    }
    cut.pop_back();
    logical += cut;
    logical += ' ';
  }
  return logical;
}

}  // namespace

std::optional<std::string> SlurmConfigLine::Get(std::string_view key) const {
  for (const auto& [k, v] : pairs) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::vector<SlurmConfigLine> ParseSlurmConfig(std::string_view text, std::string_view file, Diagnostics* diagnostics) {
  std::vector<SlurmConfigLine> lines;
  size_t pos = 0;
  int line_number = 1;
  while (pos < text.size()) {
    int consumed = 0;
    int start_line = line_number;
    std::string logical = NextLogicalLine(text, &pos, &consumed);
    line_number += consumed;
    SlurmConfigLine parsed;
    parsed.line = start_line;
    size_t i = 0;
    auto report = [&](std::string message) {
      diagnostics->push_back({std::string(file), start_line, std::move(message)});
    };
    while (i < logical.size()) {
      if (absl::ascii_isspace(static_cast<unsigned char>(logical[i]))) {
        ++i;
        continue;
      }
      size_t token_start = i;
      while (i < logical.size() && logical[i] != '=' && !absl::ascii_isspace(static_cast<unsigned char>(logical[i]))) {
        ++i;
      }
      std::string key = absl::AsciiStrToLower(logical.substr(token_start, i - token_start));
      if (i >= logical.size() || logical[i] != '=') {
        report(absl::StrCat("expected Key=Value, got '", key, "'"));
        continue;
      }
      ++i;  // '='
      std::string value;
      if (i < logical.size() && logical[i] == '"') {
        size_t close = logical.find('"', i + 1);
        if (close == std::string::npos) {
          report(absl::StrCat("unterminated quote in the value of '", key, "'"));
          break;
        }
        value = logical.substr(i + 1, close - i - 1);
        i = close + 1;
      } else {
        size_t value_start = i;
        while (i < logical.size() && !absl::ascii_isspace(static_cast<unsigned char>(logical[i]))) ++i;
        value = logical.substr(value_start, i - value_start);
      }
      parsed.pairs.emplace_back(std::move(key), std::move(value));
    }
    if (!parsed.pairs.empty()) lines.push_back(std::move(parsed));
  }
  return lines;
}

}  // namespace rackwise::adopt
