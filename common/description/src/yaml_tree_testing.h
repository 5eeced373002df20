// Test-only: the yaml-cpp node-tree mapper that read descriptions before yaml_stream read everything. The tests
// keep it as an independent checker of the event reader (same mapping rules, diagnostics and lines, reached
// through a different parser and a node tree); nothing outside the tests reads YAML with it. Unknown keys,
// duplicate keys, wrong types, bad enum values and numbers out of range are reported with their line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rackwise/diagnostic.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"
#include "yaml_scalar.h"

namespace rackwise {

// Where the fields of a message built from YAML came from. Paths look like "racks[2].nodes" ("" is the
// document itself); lines are 1-based.
class SourceLines {
 public:
  void Set(const std::string& path, int line);
  // True when the YAML named this field (even with an empty value).
  bool Has(std::string_view path) const;
  // The line of `path`, else of its nearest recorded ancestor ("racks[2].nodes" -> "racks[2]" -> ""), else 0.
  int Line(std::string_view path) const;
  bool empty() const { return lines_.empty(); }
  // A field whose value was reported as unusable (wrong type, bad enum, ...): later checks should not report
  // it again as missing.
  void Reject(const std::string& path) { rejected_.insert(path); }
  bool Rejected(const std::string& path) const { return rejected_.contains(path); }

 private:
  absl::flat_hash_map<std::string, int> lines_;
  absl::flat_hash_set<std::string> rejected_;
};

// Parses one YAML document. Returns nullopt (with a diagnostic carrying the line) on a syntax error or when the
// text holds more than one document; a document with no content comes back as a null node.
std::optional<YAML::Node> ParseYamlDocument(std::string_view text, std::string_view file, Diagnostics* diagnostics);

// Fills `message` from `node`, which must be a map. Every problem is appended to `diagnostics`; fields that
// map cleanly are still filled, so later checks can report more. `max_visits` bounds the YAML nodes visited
// (aliases count each time they are followed); past it the mapper stops and sets `*aborted` (if given), and
// the partly filled message should not be checked further. Returns true when nothing was wrong.
bool YamlToProto(const YAML::Node& node, google::protobuf::Message* message, std::string_view file, SourceLines* lines,
                 Diagnostics* diagnostics, size_t max_visits = 1'000'000, bool* aborted = nullptr);

}  // namespace rackwise
