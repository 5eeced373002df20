// The racks ordered by power room, for refusals: CountPowerShortNodes and ChainRooms. See power_group_index.h and
// rack_power_order.h.
#include <algorithm>
#include <limits>

#include "power_group_index.h"

namespace rackwise::internal {

absl::Span<const Milliwatts> PowerGroupIndex::ChainRooms(const KeptRoomsAndTallies& kept) const {
  if (chain_rooms_generation_ == generation_) return chain_rooms_;
  const Topology& t = *topology_;
  chain_rooms_.resize(t.power_domains().size());
  const std::vector<PowerDomainId>& deepest_first = t.power_domains_deepest_first();
  for (auto it = deepest_first.rbegin(); it != deepest_first.rend(); ++it) {  // parents before their children
    const PowerDomainId parent = t.power_domains()[*it].parent;
    chain_rooms_[*it] =
        std::min(kept.pd_room[*it], parent == kNoId ? std::numeric_limits<Milliwatts>::max() : chain_rooms_[parent]);
  }
  chain_rooms_generation_ = generation_;
  return chain_rooms_;
}

void PowerGroupIndex::BuildPowerOrderRows(const KeptRoomsAndTallies& kept) const {
  const Topology& t = *topology_;
  const absl::Span<const Milliwatts> chain = ChainRooms(kept);
  const size_t types = t.node_types().size();
  const size_t row_size = types * group_width_;
  power_order_at_least_.assign(t.racks().size() * row_size, 0);
  power_order_rows_.resize(t.racks().size());
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    int* row = &power_order_at_least_[r * row_size];
    for (const RackTypeTally& tally : kept.rack_tallies[r]) {
      int running = 0;  // suffix sums: nodes with at least f free
      for (size_t f = tally.up_by_free.size(); f-- > 0;)
        row[tally.type * group_width_ + f] = running += tally.up_by_free[f];
    }
    const PowerDomainId p = t.racks()[r].power_domain;
    const Milliwatts own = kept.rack_room[r];
    power_order_rows_[r] = {own, p == kNoId ? own : std::min(own, chain[p]), absl::MakeConstSpan(row, row_size)};
  }
}

const RackPowerOrder& PowerGroupIndex::FreshPowerOrder(const KeptRoomsAndTallies& kept) const {
  if (power_order_generation_ != generation_) {
    BuildPowerOrderRows(kept);
    power_order_.Rebuild(power_order_rows_, static_cast<int>(topology_->node_types().size()),
                         static_cast<int>(group_width_));
    power_order_generation_ = generation_;
  }
  return power_order_;
}

PowerGroupIndex::PowerShortNodes PowerGroupIndex::CountPowerShortNodes(const KeptRoomsAndTallies& kept, NodeTypeId type,
                                                                       int least, Milliwatts need) const {
  if (power_order_generation_ != generation_) {
    if (asks_generation_ != generation_) {
      asks_generation_ = generation_;
      asks_ = 0;
    }
    if (++asks_ < kAsksBeforePowerOrder) return CountPowerShortNodesByGroup(kept, type, least, need);
  }
  const RackPowerOrder::Counts counts = FreshPowerOrder(kept).Count(type, std::max(least, 0), need);
  PowerShortNodes out;
  out.rack_short = counts.below_own;
  out.chain_short = counts.below_least - counts.below_own;
  out.powered = counts.all - counts.below_least;
  return out;
}

absl::Status PowerGroupIndex::CheckPowerOrder(const KeptRoomsAndTallies& kept) const {
  FreshPowerOrder(kept);
  BuildPowerOrderRows(kept);  // from the indexes as they are now, not as the order last saw them
  return power_order_.Check(power_order_rows_);
}

}  // namespace rackwise::internal
