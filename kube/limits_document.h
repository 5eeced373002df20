// The steered GPU limits the extender publishes on GET /limits and rackwise-node-agent follows: one entry per
// held allocation that has running pods, with the watts per GPU its GPUs should have now (its declared watts
// when steering holds it at nothing lower, so that an agent can also restore), and a generation that changes
// whenever any target changes. Written by the extender, read by the agent; both sides use this one codec.
//
//   {"generation": 7,
//    "allocations": [{"allocation": "pod/ml/train", "watts_per_gpu": 412.5, "declared_watts_per_gpu": 600,
//                     "pods": [{"namespace": "ml", "name": "train", "uid": "…", "node": "gpu001"}]}]}
//
// The agent reads a document from the network, so parsing is strict: every field present with its type, watts
// finite and within the core's bounds, names non-empty; any fault is an InvalidArgument naming the entry and
// field, never a partial document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rackwise::k8s {

struct SteeredPod {
  std::string namespace_, name, uid, node;
  friend bool operator==(const SteeredPod&, const SteeredPod&) = default;
};

struct SteeredLimit {
  std::string allocation;
  int64_t milliwatts_per_gpu = 0;           // the target now
  int64_t declared_milliwatts_per_gpu = 0;  // what the allocation declared (the target when not steered)
  std::vector<SteeredPod> pods;
  friend bool operator==(const SteeredLimit&, const SteeredLimit&) = default;
};

struct LimitsDocument {
  uint64_t generation = 0;
  std::vector<SteeredLimit> allocations;  // sorted by allocation id
  friend bool operator==(const LimitsDocument&, const LimitsDocument&) = default;
};

std::string EncodeLimitsDocument(const LimitsDocument& document);
absl::StatusOr<LimitsDocument> ParseLimitsDocument(absl::string_view body);

// Only the entries with a pod on `node`, and only those pods (what one agent needs).
LimitsDocument LimitsForNode(const LimitsDocument& document, absl::string_view node);

}  // namespace rackwise::k8s
