// See rackwise/refusal_memo.h.
#include "rackwise/refusal_memo.h"

#include "absl/hash/hash.h"
#include "rackwise/placer.h"
#include "request_setup.h"

namespace rackwise {

std::optional<RefusalMemo::Key> RefusalMemo::KeyOf(const Ledger& ledger, const PlacementRequest& r) {
  absl::StatusOr<Locality> locality = internal::EffectiveLocality(ledger.topology().policy(), r);
  if (!locality.ok()) return std::nullopt;  // malformed: the placer says why, every time
  Key key;
  key.gpus = r.gpus;
  key.gpus_per_node = r.gpus_per_node;
  key.share_gpus = r.share_gpus;
  key.locality = *locality;
  key.watts_per_gpu = r.watts_per_gpu;
  key.node_type = r.node_type;
  key.report_refusal = r.report_refusal;
  key.fewest_types_required = internal::FewestTypesRequired(r, *locality);
  key.allowed = r.allowed_nodes.size();
  key.excluded = r.excluded_nodes.size();
  key.nodes_hash = absl::HashOf(r.allowed_nodes, r.excluded_nodes);
  return key;
}

void RefusalMemo::Forget(std::string_view id) { entries_.erase(absl::string_view(id.data(), id.size())); }

absl::StatusOr<PlacementOutcome> RefusalMemo::Place(const Ledger& ledger, const PlacementRequest& request) {
  const std::optional<Key> key = KeyOf(ledger, request);
  if (key) {
    auto it = entries_.find(request.id);
    if (it != entries_.end() && it->second.generation == ledger.generation() && it->second.key == *key) {
      ++hits_;
      return PlacementOutcome{it->second.refusal};
    }
  }
  ++misses_;
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(ledger, request);
  const auto* refusal = outcome.ok() ? std::get_if<PlacementRefusal>(&*outcome) : nullptr;
  if (!key || refusal == nullptr) {
    entries_.erase(request.id);
    return outcome;
  }
  if (entries_.size() >= capacity_ && !entries_.contains(request.id)) entries_.clear();
  entries_[request.id] = Entry{ledger.generation(), *key, *refusal};
  return outcome;
}

}  // namespace rackwise
