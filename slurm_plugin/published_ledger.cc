// SPDX-License-Identifier: GPL-2.0-or-later
// See published_ledger.h.
#include "published_ledger.h"

#include <filesystem>

#include "rackwise/cluster_description.h"
#include "rackwise/cluster_state.h"

namespace rackwise::slurm {

v1::ClusterState PublishedLedger(const Ledger& ledger, const OversubscribedAllocations& oversubscribed) {
  v1::ClusterState state = CaptureClusterState(ledger);
  oversubscribed.AddTo(&state);
  return state;
}

absl::StatusOr<OversubscribedAllocations> ReadOversubscribedJobs(const std::string& path,
                                                                 const std::string& description_yaml,
                                                                 const std::string& description_file) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return absl::NotFoundError(path + ": not published yet");
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description =
      ParseClusterDescription(description_yaml, description_file, &diagnostics);
  if (!description.ok()) return description.status();
  absl::StatusOr<v1::ClusterState> state = LoadClusterState(path, *description, &diagnostics);
  if (!state.ok()) return state.status();
  OversubscribedAllocations book;
  book.Restore(*state);
  return book;
}

}  // namespace rackwise::slurm
