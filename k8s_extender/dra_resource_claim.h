// A ResourceClaim (resource.k8s.io/v1) as rackwise reads it: its spec (what it asks), and once the scheduler
// has allocated it, the devices it got (`status.allocation.devices.results`: request, driver, pool, device)
// and the pods using it (`status.reservedFor`). A claim shared by several pods is one claim: its devices are
// counted once, however many pods name it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra_claim_spec.h"
#include "json_fields.h"

namespace rackwise::k8s {

struct AllocatedDevice {
  std::string request;  // "main" or "main/sub" (firstAvailable)
  std::string driver, pool, device;
};

struct ResourceClaim {
  std::string namespace_, name, uid;
  ClaimSpec spec;
  bool allocated = false;                 // status.allocation is set
  std::vector<AllocatedDevice> devices;   // status.allocation.devices.results
  std::vector<std::string> reserved_for;  // uids of status.reservedFor entries

  std::string Key() const { return namespace_ + "/" + name; }
  // Reads a ResourceClaim object; errors name the claim and the field.
  static absl::StatusOr<ResourceClaim> Parse(const Json& claim);
};

// "namespace/name" of any namespaced object ("default" when the namespace is unset); "" without a name.
std::string ObjectKey(const Json& object);

}  // namespace rackwise::k8s
