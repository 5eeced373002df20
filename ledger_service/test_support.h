// Allocations and clusters for the ledger service's tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::ledger::testing {

// `owner` holding `gpus` of `node`.
inline v1::Allocation MakeAllocation(const std::string& owner, const std::string& node,
                                     std::initializer_list<uint32_t> gpus) {
  v1::Allocation a;
  a.set_id(owner);
  v1::NodeGpus* ng = a.add_nodes();
  ng->set_node(node);
  for (uint32_t g : gpus) ng->add_gpus(g);
  return a;
}

// All eight GPUs of `node`.
inline v1::Allocation WholeNode(const std::string& owner, const std::string& node) {
  return MakeAllocation(owner, node, {0, 1, 2, 3, 4, 5, 6, 7});
}

// A description with `racks` racks of 32 8-GPU nodes (b<rack>n<i>) and caps far above their draw, for
// thousands of one-GPU allocations. Written to `path`.
inline void WriteLargeCluster(const std::string& path, int racks) {
  std::ofstream out(path);
  out << "cluster: large\nnode_types:\n  - name: hgx\n    gpus: 8\n    nvlink: node\n"
         "    node_watts: 10000\n    idle_watts: 2000\nracks:\n";
  for (int r = 1; r <= racks; ++r) {
    out << "  - name: b" << r << "\n    type: hgx\n    nodes: b" << r << "n[1-32]\n    power_cap_kw: 1000\n";
  }
}

// The i-th one-GPU allocation of the large cluster (GPU i % 8 of node i / 8), owned by `<prefix><i>`.
inline v1::Allocation LargeClusterGpu(const std::string& prefix, int i) {
  const int node = i / 8;
  return MakeAllocation(absl::StrCat(prefix, i), absl::StrCat("b", node / 32 + 1, "n", node % 32 + 1),
                        {static_cast<uint32_t>(i % 8)});
}

}  // namespace rackwise::ledger::testing
