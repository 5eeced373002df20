// See dra_resource_claim.h.
#include "dra_resource_claim.h"

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

std::string ObjectKey(const Json& object) {
  const Json* meta = FindField(object, "metadata");
  if (meta == nullptr) return "";
  std::string name = StringField(*meta, "name");
  if (name.empty()) return "";
  std::string ns = StringField(*meta, "namespace");
  return absl::StrCat(ns.empty() ? "default" : ns, "/", name);
}

absl::StatusOr<ResourceClaim> ResourceClaim::Parse(const Json& claim) {
  ResourceClaim out;
  if (const Json* meta = FindField(claim, "metadata")) {
    out.name = StringField(*meta, "name");
    out.namespace_ = StringField(*meta, "namespace");
    out.uid = StringField(*meta, "uid");
  }
  if (out.namespace_.empty()) out.namespace_ = "default";
  if (out.name.empty()) return absl::InvalidArgumentError("ResourceClaim: metadata.name is missing");
  const std::string where = absl::StrCat("ResourceClaim ", out.Key(), ": spec");
  static const Json kEmpty = Json::object();
  const Json* spec = FindField(claim, "spec");
  absl::StatusOr<ClaimSpec> parsed = ClaimSpec::Parse(spec != nullptr ? *spec : kEmpty, where);
  if (!parsed.ok()) return parsed.status();
  out.spec = std::move(*parsed);
  const Json* status = FindField(claim, "status");
  if (status == nullptr) return out;
  if (const Json* allocation = FindField(*status, "allocation")) {
    out.allocated = true;
    const Json* results = FindPath(*allocation, {"devices", "results"});
    if (results != nullptr && results->is_array()) {
      for (const Json& r : *results) {
        out.devices.push_back(
            {StringField(r, "request"), StringField(r, "driver"), StringField(r, "pool"), StringField(r, "device")});
      }
    }
  }
  if (const Json* reserved = FindField(*status, "reservedFor"); reserved != nullptr && reserved->is_array()) {
    for (const Json& ref : *reserved) out.reserved_for.push_back(StringField(ref, "uid"));
  }
  return out;
}

}  // namespace rackwise::k8s
