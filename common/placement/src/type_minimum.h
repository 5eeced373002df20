// Internal to the placer: what `required` means when a job may use several node types. It is the fewest NVLink
// domains the cluster can give the job over every type it may use, each type's minimum counted under the
// described caps on the empty cluster (PlacementContext::FewestDomainsEver), so that a 72-GPU job that one
// NVL72 rack could hold does not start on 18 HGX nodes. Required jobs wait for a type that gives that minimum;
// preferred ones take it when they can, else the best they can get now.
#pragma once

#include <string>
#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"
#include "request_setup.h"

namespace rackwise::internal {

struct TypeMinimum {
  int domains = 0;               // the least over the types; 0: no type can ever hold the job
  NodeTypeId type = kNoId;       // the first type (description order) that gives it
  std::vector<int> per_type;     // indexed by node type id: that type's fewest (0: never, or not allowed)
  std::vector<int> by_size;      // indexed by node type id: ceil(gpus / usable domain size)
  std::vector<int> domain_gpus;  // indexed by node type id: the usable domain size for this job
  // Whether `candidate` gives the least (and some type can hold the job at all).
  bool Gives(NodeTypeId candidate) const { return domains > 0 && per_type[candidate] == domains; }
};

TypeMinimum FewestDomainsOverTypes(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup);

// "the fewest NVLink domains this cluster can give 64 GPUs is 1, on gb200-tray (domains of 72 GPUs); hgx-h100
// would need 8", and why the caps raise a type's minimum when they do.
std::string DescribeTypeMinimum(const Topology& topology, const PlacementRequest& request, const TypeMinimum& m);

}  // namespace rackwise::internal
