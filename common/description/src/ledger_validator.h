// The rules of a description's `ledger:` section (the shared power ledger the faces reserve through): replica
// addresses, TLS files, the call deadline, and the owners' static shares (valid owner prefixes, none under
// another, each in [0, 1], summing to at most 1). Reported like every other rule: at the line of the field to edit.
#pragma once

#include <string_view>

#include "field_path_lines.h"
#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

// Appends a diagnostic for every `ledger:` rule `description` breaks (nothing when it has no such section).
void CheckLedgerLink(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                     Diagnostics* diagnostics);

}  // namespace rackwise
