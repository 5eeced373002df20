// Base64 (RFC 4648, with padding), as etcd's JSON gateway carries every key and value.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace rackwise::ledger {

std::string Base64Encode(absl::string_view bytes);
// InvalidArgument when `text` is not padded base64 (a length that is not a multiple of 4, a foreign character).
absl::StatusOr<std::string> Base64Decode(absl::string_view text);

}  // namespace rackwise::ledger
