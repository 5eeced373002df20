// Reading JSON the way Go's encoding/json does: object keys match exactly first, then case-insensitively
// (so "NodeNames", "nodeNames" and "nodenames" all work), and a `null` value is the same as an absent key.
// Writing: a fast JSON string escaper, because the extender's answers are built by hand for speed.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <nlohmann/json.hpp>

namespace rackwise::k8s {

using Json = nlohmann::json;

// Nesting deeper than this is refused before parsing (the parser recurses; a body of 10^6 '[' must not crash).
inline constexpr int kMaxJsonDepth = 64;

// Parses a body into a DOM, refusing syntax errors, nesting deeper than kMaxJsonDepth and non-objects.
absl::StatusOr<Json> ParseJsonObject(absl::string_view body);

// The value under `key` in `object`, or nullptr when `object` is not an object, the key is absent, or its value
// is null. Exact matches win over case-insensitive ones, as in Go.
const Json* FindField(const Json& object, absl::string_view key);

// The string under `key`, or "" (absent, null or not a string).
std::string StringField(const Json& object, absl::string_view key);

// Follows a path of keys: FindPath(pod, {"metadata", "annotations"}).
const Json* FindPath(const Json& object, std::initializer_list<absl::string_view> path);

// Appends `text` to `out` as a quoted JSON string (control characters, quotes and backslashes escaped; bytes
// that are not valid UTF-8 are replaced by U+FFFD so the output always parses).
void AppendJsonString(absl::string_view text, std::string* out);

bool EqualsIgnoreCase(absl::string_view a, absl::string_view b);

}  // namespace rackwise::k8s
