// The candidate nodes of one extender call (ExtenderArgs.NodeNames, or the names of a NodeList), decoded once:
// each name, the JSON text that answers echo it with, and its NodeId in the cluster description.
//
// Why a cache: with nodeCacheCapable kube-scheduler sends every pod the same list of thousands of names until
// the cluster changes (and prioritize gets the same feasible subset for pods of the same shape). Scanning,
// escaping and hash-resolving 5,000 names costs more than placing the pod, so CandidateNodeCache keeps recent
// lists by their exact bytes; a repeat costs one memcmp. A list is matched only byte for byte against a list
// that was fully scanned and validated before, so a cached answer is the answer a fresh scan would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rackwise/topology.h"

namespace rackwise::k8s {

class CandidateNodes {
 public:
  CandidateNodes() = default;
  // From plain names (the NodeList mode, tests): every name is escaped for the answers.
  explicit CandidateNodes(std::vector<std::string> names);

  // Appends a decoded name. `json_token` is the quoted JSON text it arrived as; it is echoed in answers when it
  // is plain ASCII, otherwise the name is escaped afresh (so answers are valid UTF-8 whatever came in).
  void Add(std::string name, absl::string_view json_token);

  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  const std::string& name(size_t i) const { return names_[i]; }
  const std::vector<std::string>& names() const { return names_; }
  // The quoted JSON text of name i.
  absl::string_view json(size_t i) const {
    size_t begin = i == 0 ? 0 : json_end_[i - 1];
    return absl::string_view(json_).substr(begin, json_end_[i] - begin);
  }

  // Looks every name up in `topology` (kNoId: not in the description). Names usually arrive in the order of
  // the description, so the node after the previous one is tried before the hash index.
  void Resolve(const Topology& topology) { ResolveInto(topology, &ids_); }
  void ResolveInto(const Topology& topology, std::vector<NodeId>* ids) const;
  bool resolved() const { return ids_.size() == names_.size(); }
  const std::vector<NodeId>& ids() const { return ids_; }

  size_t ApproximateBytes() const;

 private:
  std::vector<std::string> names_;
  std::string json_;                // the quoted tokens back to back
  std::vector<uint32_t> json_end_;  // token i ends here in json_
  std::vector<NodeId> ids_;
};

// Recently seen candidate lists, keyed by the exact bytes of their JSON array. Thread-safe; bounded in entries
// and bytes (least recently used goes first).
class CandidateNodeCache {
 public:
  // Lists are resolved against `topology` when inserted; it must outlive the cache. Lists shorter than
  // `min_names` are cheap to scan and not kept (caching them would only churn the entries that matter).
  explicit CandidateNodeCache(const Topology* topology, size_t max_entries = 16, size_t max_bytes = 64u << 20,
                              size_t min_names = 32);

  // The cached list whose array text (from '[' to its ']') is a prefix of `text`, or null. *length gets the
  // length of that array text.
  std::shared_ptr<const CandidateNodes> Match(absl::string_view text, size_t* length);
  // Resolves `nodes` and remembers it under `array_text` (unless it is shorter than min_names).
  std::shared_ptr<const CandidateNodes> Insert(absl::string_view array_text, CandidateNodes nodes);

  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    std::string text;
    std::shared_ptr<const CandidateNodes> nodes;
  };
  const Topology* topology_;
  const size_t max_entries_, max_bytes_, min_names_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // most recently used first; a handful, so a vector beats a list
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace rackwise::k8s
