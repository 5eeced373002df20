// SPDX-License-Identifier: GPL-2.0-or-later
// What the select plugin knows about the cluster: the description (rackwise.yaml beside slurm.conf) compiled
// into a Topology, the live Ledger, a static ledger (empty, healthy) for submit-time feasibility, and the map
// between Slurm's node table indices and the core's NodeIds.
//
// Building one checks the description against the nodes slurm.conf defines, so that a mismatch is refused
// with a message naming the nodes, rather than discovered as a wrong placement later. Pure C++: the Slurm
// side hands in plain node names and GPU counts, which keeps this testable without slurmctld.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::slurm {

// A node as slurm.conf defines it: its name and the GPUs its Gres= line configures.
struct SlurmNode {
  std::string name;
  int gpus = 0;
};

// GPUs in a node's Gres= string: "gpu:8", "gpu:h100:8(S:0-1)", "gpu:a:4,gpu:b:4", "gpu" (one), "mps:100"
// (none). Returns -1 if a gpu entry's count is malformed.
int GpusInGresString(std::string_view gres);

class ClusterModel {
 public:
  // Reads and validates `path`, then Build(). Errors carry the file name (and line, from the parser).
  static absl::StatusOr<std::unique_ptr<ClusterModel>> Load(const std::string& path,
                                                            const std::vector<SlurmNode>& slurm_nodes);
  // Parses `yaml` (named `file` in messages), then Build().
  static absl::StatusOr<std::unique_ptr<ClusterModel>> FromYaml(std::string_view yaml, const std::string& file,
                                                                const std::vector<SlurmNode>& slurm_nodes);
  // Compiles `description` and checks it against `slurm_nodes` (index i = Slurm node index i): every
  // described node must exist in slurm.conf with the same GPU count, and every Slurm node with GPUs must be
  // described. FailedPrecondition lists the disagreements.
  static absl::StatusOr<std::unique_ptr<ClusterModel>> Build(const v1::ClusterDescription& description,
                                                             std::string file,
                                                             const std::vector<SlurmNode>& slurm_nodes);

  ClusterModel(const ClusterModel&) = delete;
  ClusterModel& operator=(const ClusterModel&) = delete;

  const std::string& file() const { return file_; }
  const Topology& topology() const { return topology_; }
  Ledger& ledger() { return ledger_; }
  const Ledger& ledger() const { return ledger_; }
  // Nothing allocated, every node up, caps as described: what can ever fit.
  const Ledger& static_ledger() const { return static_ledger_; }
  // power_enforcement.mode is not `disabled`: nodes set GPU power limits in the job prolog.
  bool power_limits_enforced() const { return power_limits_enforced_; }

  // kNoId for Slurm nodes the description does not list (nodes without GPUs) or indices out of range.
  NodeId ToNode(int slurm_index) const;
  // -1 if the node has no Slurm index (cannot happen after a successful Build).
  int ToSlurm(NodeId node) const;
  int slurm_node_count() const { return static_cast<int>(slurm_to_node_.size()); }

 private:
  ClusterModel(Topology topology, std::string file);

  std::string file_;
  Topology topology_;  // declared before the ledgers, which point at it
  Ledger ledger_;
  Ledger static_ledger_;
  std::vector<NodeId> slurm_to_node_;
  std::vector<int> node_to_slurm_;
  bool power_limits_enforced_ = true;
};

}  // namespace rackwise::slurm
