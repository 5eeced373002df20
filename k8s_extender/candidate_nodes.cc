// Candidate node lists and their cache (see candidate_nodes.h).
#include "candidate_nodes.h"

#include <algorithm>
#include <cstring>

#include "json_fields.h"

namespace rackwise::k8s {
namespace {

// Bytes compared first: lists that share a long prefix (all nodes vs the feasible ones) differ near the end.
constexpr size_t kTailProbe = 32;

bool IsPlainAscii(absl::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

CandidateNodes::CandidateNodes(std::vector<std::string> names) {
  names_.reserve(names.size());
  json_end_.reserve(names.size());
  for (std::string& n : names) Add(std::move(n), "");
}

void CandidateNodes::Add(std::string name, absl::string_view json_token) {
  if (!json_token.empty() && IsPlainAscii(json_token)) {
    json_.append(json_token.data(), json_token.size());
  } else {
    AppendJsonString(name, &json_);
  }
  json_end_.push_back(static_cast<uint32_t>(json_.size()));
  names_.push_back(std::move(name));
  ids_.clear();
}

void CandidateNodes::ResolveInto(const Topology& topology, std::vector<NodeId>* ids_out) const {
  const std::vector<Node>& nodes = topology.nodes();
  std::vector<NodeId>& ids = *ids_out;
  ids.assign(names_.size(), kNoId);
  NodeId previous = kNoId;
  for (size_t i = 0; i < names_.size(); ++i) {
    NodeId next = previous + 1;
    if (next >= 0 && static_cast<size_t>(next) < nodes.size() && nodes[next].name == names_[i]) {
      ids[i] = next;
    } else if (std::optional<NodeId> id = topology.FindNode(names_[i])) {
      ids[i] = *id;
    }
    previous = ids[i];
  }
}

size_t CandidateNodes::ApproximateBytes() const {
  size_t bytes = json_.capacity() + json_end_.capacity() * sizeof(uint32_t) + ids_.capacity() * sizeof(NodeId);
  for (const std::string& n : names_) bytes += sizeof(std::string) + (n.size() > 15 ? n.capacity() : 0);
  return bytes;
}

CandidateNodeCache::CandidateNodeCache(const Topology* topology, size_t max_entries, size_t max_bytes, size_t min_names)
    : topology_(topology), max_entries_(max_entries), max_bytes_(max_bytes), min_names_(min_names) {}

std::shared_ptr<const CandidateNodes> CandidateNodeCache::Match(absl::string_view text, size_t* length) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < entries_.size(); ++k) {
    const std::string& t = entries_[k].text;
    if (t.size() > text.size()) continue;
    size_t probe = std::min(kTailProbe, t.size());
    if (std::memcmp(t.data() + t.size() - probe, text.data() + t.size() - probe, probe) != 0) continue;
    if (std::memcmp(t.data(), text.data(), t.size() - probe) != 0) continue;
    ++hits_;
    *length = t.size();
    if (k != 0) std::rotate(entries_.begin(), entries_.begin() + k, entries_.begin() + k + 1);
    return entries_.front().nodes;
  }
  ++misses_;
  return nullptr;
}

std::shared_ptr<const CandidateNodes> CandidateNodeCache::Insert(absl::string_view array_text, CandidateNodes nodes) {
  nodes.Resolve(*topology_);
  auto shared = std::make_shared<const CandidateNodes>(std::move(nodes));
  const size_t bytes = array_text.size() + shared->ApproximateBytes();
  if (shared->size() < min_names_ || bytes > max_bytes_ || max_entries_ == 0) return shared;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.text == array_text) return e.nodes;  // another worker scanned the same list meanwhile
  }
  while (!entries_.empty() && (entries_.size() >= max_entries_ || bytes_ + bytes > max_bytes_)) {
    bytes_ -= entries_.back().text.size() + entries_.back().nodes->ApproximateBytes();
    entries_.pop_back();
  }
  entries_.insert(entries_.begin(), Entry{std::string(array_text), shared});
  bytes_ += bytes;
  return shared;
}

uint64_t CandidateNodeCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t CandidateNodeCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace rackwise::k8s
