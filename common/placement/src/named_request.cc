// See named_request.h.
#include "rackwise/named_request.h"

#include "absl/strings/str_cat.h"
#include "rackwise/hostlist.h"

namespace rackwise {
namespace {

absl::Status ResolveNodes(const Topology& t, const std::vector<std::string>& lists, const char* field,
                          std::vector<NodeId>* out) {
  for (const std::string& list : lists) {
    absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(list);
    if (!names.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", names.status().message()));
    for (const std::string& name : *names) {
      std::optional<NodeId> n = t.FindNode(name);
      if (!n) return absl::InvalidArgumentError(absl::StrCat(field, ": no node named '", name, "' in the cluster"));
      out->push_back(*n);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PlacementRequest> ResolveRequest(const Topology& t, const NamedRequest& named) {
  if (named.gpus < 1 || named.gpus > kMaxRequestGpus)
    return absl::InvalidArgumentError(absl::StrCat("gpus: must be in 1..", kMaxRequestGpus, ", got ", named.gpus));
  if (named.gpus_per_node < 0 || named.gpus_per_node > kMaxGpusPerNode)
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_node: must be in 0..", kMaxGpusPerNode, ", got ", named.gpus_per_node));
  PlacementRequest r;
  r.id = named.id;
  r.gpus = static_cast<int>(named.gpus);
  r.gpus_per_node = static_cast<int>(named.gpus_per_node);
  r.locality = named.locality;
  r.watts_per_gpu = named.watts_per_gpu;
  r.waited_seconds = named.waited_seconds;
  if (!named.node_type.empty()) {
    r.node_type = t.FindNodeType(named.node_type);
    if (!r.node_type)
      return absl::InvalidArgumentError(absl::StrCat("node_type: no node type named '", named.node_type, "'"));
  }
  if (absl::Status s = ResolveNodes(t, named.allowed_nodes, "allowed_nodes", &r.allowed_nodes); !s.ok()) return s;
  if (absl::Status s = ResolveNodes(t, named.excluded_nodes, "excluded_nodes", &r.excluded_nodes); !s.ok()) return s;
  return r;
}

}  // namespace rackwise
