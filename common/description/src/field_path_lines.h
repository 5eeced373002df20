// The lines of a LineTable looked up by field path, for the description checkers, which name fields as their
// diagnostics do: "racks[2].nodes", "ledger.tls.ca_file", "" for the document. Paths are resolved against the
// message that was read (its descriptor names the fields, its list sizes bound the indices).
#pragma once

#include <string_view>

#include "google/protobuf/message.h"
#include "line_table.h"

namespace rackwise {

class FieldPathLines {
 public:
  // No lines at all: every lookup answers 0 / false (a message built in code, not read from YAML).
  FieldPathLines() = default;
  // Both must outlive this.
  FieldPathLines(const LineTable& lines, const google::protobuf::Message& message)
      : lines_(&lines), message_(&message) {}

  // The line of `path`, else of its nearest written ancestor ("racks[2].nodes" -> "racks[2]" -> ""), else 0.
  int Line(std::string_view path) const;
  // True when the YAML named this field with a value (`key:` alone does not count).
  bool Has(std::string_view path) const;
  // A field whose value was reported as unusable (wrong type, bad enum, ...): later checks should not report
  // it again as missing.
  bool Rejected(std::string_view path) const;
  bool empty() const { return lines_ == nullptr; }

 private:
  struct Found {
    int line = 0;        // of the path, or of its nearest written ancestor
    bool exact = false;  // the whole path was written
    bool rejected = false;
  };
  Found Resolve(std::string_view path) const;

  const LineTable* lines_ = nullptr;
  const google::protobuf::Message* message_ = nullptr;
};

}  // namespace rackwise
