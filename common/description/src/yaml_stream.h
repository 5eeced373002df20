// YAML -> protobuf in one pass over libyaml's events, driven by the message descriptors (protobuf reflection):
// the one reader of YAML into messages, for cluster descriptions and for state files of 100k allocations alike.
// YAML keys are the snake_case field names; enum values are written in lower case without their prefix
// (`nvlink: rack`; yaml_scalar.h). No node tree is built: lines go to a LineTable. Aliases are replayed from the
// events recorded under their anchor, and every event read or replayed counts against a budget, so fan-out
// through aliases ("billion laughs") is bounded; nesting is bounded too.
#pragma once

#include <cstddef>
#include <string_view>

#include "google/protobuf/message.h"
#include "line_table.h"
#include "rackwise/diagnostic.h"

namespace rackwise {

// Fills `message` from the single YAML document in `yaml` (`what` names it in diagnostics: "state file"). An
// empty text, document or map leaves the message empty, or is refused ("empty description", line 0) unless
// `empty_ok`. Returns false when the text is not usable at all (a syntax error, more than one document, not a map
// at the top, over `max_events`): then `diagnostics` holds just that problem. Otherwise every mapping problem is
// appended (unknown or duplicate keys, wrong types, bad enum values, numbers out of range) and fields that map cleanly
// are still filled, so later checks can report more.
bool StreamYamlToProto(std::string_view yaml, std::string_view file, std::string_view what, bool empty_ok,
                       google::protobuf::Message* message, LineTable* lines, Diagnostics* diagnostics,
                       size_t max_events);

}  // namespace rackwise
