// YAML -> protobuf in one pass over libyaml's events, for inputs too large for a node tree: state files of
// 100k allocations. Same mapping rules and diagnostics as yaml_to_proto (yaml_scalar.h holds the shared part);
// lines go to a LineTable. Aliases are replayed from the events recorded under their anchor, and every event
// read or replayed counts against a budget, so fan-out through aliases is bounded as in yaml_to_proto.
#pragma once

#include <cstddef>
#include <string_view>

#include "google/protobuf/message.h"
#include "line_table.h"
#include "rackwise/diagnostic.h"

namespace rackwise {

// Fills `message` from the single YAML document in `yaml` (`what` names it in diagnostics: "state file"). An
// empty text, document or map leaves the message empty. Returns false when the text is not usable at all (a
// syntax error, more than one document, not a map at the top, over `max_events`): then `diagnostics` holds just
// that problem. Otherwise every mapping problem is appended (unknown or duplicate keys, wrong types, bad enum
// values, numbers out of range) and fields that map cleanly are still filled, so later checks can report more.
bool StreamYamlToProto(std::string_view yaml, std::string_view file, std::string_view what,
                       google::protobuf::Message* message, LineTable* lines, Diagnostics* diagnostics,
                       size_t max_events);

}  // namespace rackwise
