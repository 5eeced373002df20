// libyaml's event parser as a pull stream with aliases resolved on demand: the events of every anchored node
// are recorded (once, however deeply anchors nest) and an alias is replayed from them only when its reader asks
// (skipping an alias costs one event). Every event read or replayed counts against a budget.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace rackwise {

struct YamlEvent {
  enum Kind {
    kStreamStart,
    kStreamEnd,
    kDocumentStart,
    kDocumentEnd,
    kScalar,
    kAlias,
    kListStart,
    kListEnd,
    kMapStart,
    kMapEnd,
    kFailed
  };
  Kind kind = kFailed;
  int line = 0;         // 1-based
  std::string value;    // a scalar's text; an alias's anchor name
  std::string anchor;   // the anchor a node defines ("" for none)
  std::string tag;      // an explicit tag other than "!" ("" for none)
  bool quoted = false;  // not a plain scalar, or tagged "!": always a string

  // A plain, untagged "", "~" or "null": YAML's null, which the mappers read as an absent value.
  bool IsNull() const;
  // How diagnostics name it: "a map", "a list", "nothing" (null) or the scalar quoted.
  std::string Describe() const;
};

class YamlEventSource {
 public:
  // Deeper nesting is refused as a syntax error (the state schema is 4 levels deep).
  static constexpr int kMaxDepth = 1000;

  YamlEventSource(std::string_view yaml, size_t max_events);
  ~YamlEventSource();
  YamlEventSource(const YamlEventSource&) = delete;
  YamlEventSource& operator=(const YamlEventSource&) = delete;

  // Moves to the next event. False (and current() is kFailed) after a syntax error, an alias to an anchor not
  // (yet) complete, or past the budget; error() says which.
  bool Next();
  // The current event is an alias: makes the first event of its anchored node current, the rest following.
  void FollowAlias();
  const YamlEvent& current() const { return *current_; }

  bool failed() const { return failed_; }
  bool over_budget() const { return over_budget_; }
  int error_line() const { return error_line_; }
  const std::string& error() const { return error_; }

 private:
  struct Cursor {
    size_t next;
    size_t end;
  };
  struct OpenAnchor {
    std::string name;
    size_t begin;
    int depth;
  };
  bool ReadLive();
  void Record();
  bool Fail(int line, std::string message);

  struct Parser;
  std::unique_ptr<Parser> parser_;
  std::string escaped_;    // the text with stray (non-UTF-8) bytes escaped, when it has any
  std::string_view text_;  // what libyaml reads
  size_t max_events_;
  size_t events_ = 0;
  YamlEvent live_;
  const YamlEvent* current_ = &live_;
  std::vector<YamlEvent> recorded_;  // events of anchored nodes, nested anchors sharing them
  std::vector<OpenAnchor> open_;
  absl::flat_hash_map<std::string, Cursor> anchors_;  // complete anchored nodes: [next, end) of recorded_
  std::vector<Cursor> replay_;
  int live_depth_ = 0;
  bool failed_ = false;
  bool over_budget_ = false;
  int error_line_ = 0;
  std::string error_;
};

}  // namespace rackwise
