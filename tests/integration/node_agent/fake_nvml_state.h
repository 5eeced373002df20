// Reading what the fake libnvidia-ml.so.1 (tests/fake_nvml) holds, for tests that run rackwise-node-agent as a
// process: its state file ("gpu UUID MIN MAX DEFAULT CURRENT USAGE" per board) and any log a process wrote.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace rackwise::node_agent {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The limit in force on each board, in milliwatts, in the state file's order.
inline std::vector<int64_t> FakeNvmlLimits(const std::string& state_file) {
  std::vector<int64_t> out;
  for (absl::string_view line : absl::StrSplit(ReadAll(state_file), '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    int64_t current = 0;
    if (f.size() >= 6 && f[0] == "gpu" && absl::SimpleAtoi(f[5], &current)) out.push_back(current);
  }
  return out;
}

}  // namespace rackwise::node_agent
