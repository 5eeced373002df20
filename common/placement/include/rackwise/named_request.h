// A request as a person or a remote caller writes it (`rackwise place` flags, the gRPC PlacementRequest):
// node and node type names instead of the topology's ids. One resolution for every face that takes names, so
// that they accept the same names and say the same thing about a wrong one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/placement_request.h"
#include "rackwise/topology.h"

namespace rackwise {

inline constexpr int64_t kMaxRequestGpus = 1'000'000;

struct NamedRequest {
  std::string id;
  int64_t gpus = 0;
  int64_t gpus_per_node = 0;
  std::optional<Locality> locality;
  double watts_per_gpu = 0;
  std::vector<std::string> allowed_nodes;  // node names or hostlists ("gpu[001-004]"); empty: every node
  std::vector<std::string> excluded_nodes;
  std::string node_type;  // empty: any
  double waited_seconds = 0;
};

// The request with ids. InvalidArgument, naming the field as the struct does ("allowed_nodes: no node named
// 'x' in the cluster"), for an unknown name, a bad hostlist, or gpus outside 1..kMaxRequestGpus /
// gpus_per_node outside 0..kMaxGpusPerNode. Everything else (watts, divisibility) is checked by Placer::Place.
absl::StatusOr<PlacementRequest> ResolveRequest(const Topology& topology, const NamedRequest& named);

}  // namespace rackwise
