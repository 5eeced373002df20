// See ledger_shares.h.
#include "ledger_shares.h"

#include <vector>

namespace rackwise::ledger {

absl::StatusOr<GuaranteedSlices> SlicesOfDescription(const Topology& topology,
                                                     const v1::ClusterDescription& description) {
  std::vector<OwnerShare> shares;
  for (const v1::LedgerShare& s : description.ledger().shares()) shares.push_back({s.owner_prefix(), s.static_share()});
  return GuaranteedSlices::Create(topology, std::move(shares));
}

}  // namespace rackwise::ledger
