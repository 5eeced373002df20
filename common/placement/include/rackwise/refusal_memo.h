// Remembers each job's last refusal for as long as nothing the decision reads has changed. Placer::Place is a
// pure function of the ledger's state and of the request, and Ledger::generation() names the state: the same job
// asking the same thing at the same generation would be refused again, for the same reasons. Slurm asks again for
// every pending job on every scheduling pass; with this, a pass where nothing changed costs one lookup per job,
// and the report (nodes per reason, the power sentence) is built only when the reason can have changed.
//
// "The same thing": every field the placer reads, with the waited, fewest-domains-in and time-limit seconds
// reduced to the locality they decide (EffectiveLocality), so that a job's waiting alone does not make every try
// new. The node lists are compared by length and a 64-bit hash (a face may offer tens of thousands of nodes).
// Fits are not remembered: a face commits them, which changes the generation, and one it does not commit is
// decided again. Malformed requests are not remembered either.
//
// Not thread-safe: one per face, used under the face's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise {

class RefusalMemo {
 public:
  // `capacity`: jobs remembered at most; past it the memo starts again empty (a scheduling pass refills it).
  explicit RefusalMemo(size_t capacity = 20000) : capacity_(capacity) {}

  // What Placer::Place(ledger, request) returns: the refusal remembered for request.id when it was made at this
  // generation for the same request, else the placer's answer (remembered when it is a refusal).
  absl::StatusOr<PlacementOutcome> Place(const Ledger& ledger, const PlacementRequest& request);

  void Forget(std::string_view id);
  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Key {
    int gpus = 0;
    int gpus_per_node = 0;
    int share_gpus = 0;
    Locality locality = Locality::kPreferred;
    double watts_per_gpu = 0;
    std::optional<NodeTypeId> node_type;
    bool report_refusal = true;
    bool fewest_types_required = false;  // RequestSetup's: a backfilled job's spread kept off its fewest types
    size_t allowed = 0, excluded = 0;
    uint64_t nodes_hash = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct Entry {
    uint64_t generation = 0;
    Key key;
    PlacementRefusal refusal;
  };
  static std::optional<Key> KeyOf(const Ledger& ledger, const PlacementRequest& request);

  size_t capacity_;
  absl::flat_hash_map<std::string, Entry> entries_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace rackwise
