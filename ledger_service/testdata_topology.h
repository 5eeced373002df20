// The topology of a description in the ledger service tests' testdata folder, for the unit tests that build
// ledgers in process.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rackwise/cluster_description.h"
#include "rackwise/topology.h"

namespace rackwise::ledger::testing {

// `file`: a file name in the testdata folder, such as "two_racks.yaml".
inline absl::StatusOr<std::unique_ptr<Topology>> TestdataTopology(const std::string& file) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d =
      LoadClusterDescription(absl::StrCat(RACKWISE_LEDGER_TESTDATA, "/", file), &diagnostics);
  if (!d.ok()) return d.status();
  absl::StatusOr<Topology> t = Topology::Build(*d);
  if (!t.ok()) return t.status();
  return std::make_unique<Topology>(std::move(*t));
}

}  // namespace rackwise::ledger::testing
