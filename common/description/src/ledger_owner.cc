// See rackwise/ledger_owner.h.
#include "rackwise/ledger_owner.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rackwise::ledger {
namespace {

constexpr size_t kMaxOwnerBytes = 512;

// The checks an owner and a prefix share: size, characters, no empty segment. `what` names it in errors.
absl::Status CheckSegments(absl::string_view text, absl::string_view what, std::vector<absl::string_view>* segments) {
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (text.size() > kMaxOwnerBytes)
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", text.size(), " bytes; at most ", kMaxOwnerBytes));
  for (char c : text) {
    if (c <= ' ' || c > '~')
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", text, "' has a space or a character outside printable ASCII"));
  }
  *segments = absl::StrSplit(text, '/');
  for (absl::string_view s : *segments) {
    if (s.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " '", text, "' has an empty segment"));
  }
  return absl::OkStatus();
}

}  // namespace

OwnerKind KindOfOwner(absl::string_view owner) {
  const absl::string_view kind = owner.substr(0, owner.find('/'));
  if (kind == "slurm") return OwnerKind::kSlurm;
  if (kind == "k8s") return OwnerKind::kK8s;
  return OwnerKind::kOther;
}

absl::StatusOr<OwnerKind> ParseOwner(absl::string_view owner) {
  std::vector<absl::string_view> segments;
  if (absl::Status s = CheckSegments(owner, "owner", &segments); !s.ok()) return s;
  const OwnerKind kind = KindOfOwner(owner);
  if (kind == OwnerKind::kSlurm && segments.size() != 3)
    return absl::InvalidArgumentError(absl::StrCat("owner '", owner, "': expected slurm/<cluster>/<jobid>"));
  if (kind == OwnerKind::kK8s && segments.size() != 3)
    return absl::InvalidArgumentError(absl::StrCat("owner '", owner, "': expected k8s/<namespace>/<pod uid>"));
  if (segments.size() < 2)
    return absl::InvalidArgumentError(absl::StrCat("owner '", owner, "': expected <kind>/<name>"));
  return kind;
}

absl::Status CheckOwnerPrefix(absl::string_view prefix) {
  if (prefix.empty() || prefix.back() != '/')
    return absl::InvalidArgumentError(absl::StrCat("owner prefix '", prefix, "' must end with '/'"));
  std::vector<absl::string_view> segments;
  return CheckSegments(prefix.substr(0, prefix.size() - 1), "owner prefix", &segments);
}

}  // namespace rackwise::ledger
