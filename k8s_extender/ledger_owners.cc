// See ledger_owners.h.
#include "ledger_owners.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

std::string OperatorOwner(const std::string& id) {
  std::string out = "k8s/_operator/";
  for (const unsigned char c : id) {
    if (absl::ascii_isalnum(c) || c == '.' || c == ':' || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

}  // namespace rackwise::k8s
