// SPDX-License-Identifier: GPL-2.0-or-later
// The ledger select/rackwise_cons_tres publishes in StateSaveLocation (`rackwise status --state` reads it): the
// ledger's state, and the jobs it counts at less than they declared (policy.oversubscribe_pct) with both watts,
// which slurmctld reads back after a restart so that its ledger counts them as before (the job records carry only
// the declared watts). Slurm-free, so that it is unit-tested without a daemon.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::slurm {

inline constexpr char kPublishedLedgerFileName[] = "rackwise_state.yaml";

// What the publisher writes (as ClusterStateToYaml, outside the plugin's lock).
v1::ClusterState PublishedLedger(const Ledger& ledger, const OversubscribedAllocations& oversubscribed);

// The jobs counted oversubscribed in the published ledger at `path`, checked against the description in force
// (`description_yaml`, read from `description_file`). NotFound when there is no file yet (the first start);
// InvalidArgument "FILE:LINE: ..." for a file that does not read.
absl::StatusOr<OversubscribedAllocations> ReadOversubscribedJobs(const std::string& path,
                                                                 const std::string& description_yaml,
                                                                 const std::string& description_file);

}  // namespace rackwise::slurm
