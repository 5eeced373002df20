// See shared_ledger_gate.h.
#include "shared_ledger_gate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

std::string PodOwner(const std::string& key, const std::string& uid) {
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash);
  return absl::StrCat("k8s/", ns, "/", uid.empty() ? key.substr(slash + 1) : uid);
}

std::string GangSlotOwner(const std::string& slot_id) {
  const size_t slash = slot_id.find('/');
  std::string rest = slot_id.substr(slash + 1);
  // A jobset's group has a fourth segment: ':' keeps the owner at three, and no pod uid has one.
  std::replace(rest.begin(), rest.end(), '/', ':');
  return absl::StrCat("k8s/", slot_id.substr(0, slash), "/", rest);
}

}  // namespace rackwise::k8s
