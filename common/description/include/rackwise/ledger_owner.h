// Owners of allocations in the shared power ledger (ledger_service/): "slurm/<cluster>/<jobid>",
// "k8s/<namespace>/<pod uid>", or "<kind>/<name>[/...]" for anything else that draws power from the same racks.
// The owner is the allocation's id in the ledger and its key in etcd, so a face can reconcile everything under
// its own prefix and nothing else. Kept with the description so that its `ledger:` section's owner prefixes are
// checked by the same rules.
#pragma once

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rackwise::ledger {

enum class OwnerKind { kSlurm, kK8s, kOther };

// Checks an owner: segments separated by '/', none empty, printable ASCII without spaces, at most 512 bytes;
// "slurm" and "k8s" owners have exactly three segments. InvalidArgument says what is wrong.
absl::StatusOr<OwnerKind> ParseOwner(absl::string_view owner);

// The kind of an owner already checked (its first segment).
OwnerKind KindOfOwner(absl::string_view owner);

// Checks a reconcile or list prefix: one or more segments as in an owner, ending with '/' ("slurm/c1/", "k8s/").
absl::Status CheckOwnerPrefix(absl::string_view prefix);

}  // namespace rackwise::ledger
