// SPDX-License-Identifier: GPL-2.0-or-later
// Where select/rackwise_cons_tres finds and keeps its files: rackwise.yaml beside slurm.conf, and everything the
// plugin writes (the published ledger, the steered limits, the last accepted description, the shared ledger's
// metrics) in slurm.conf's StateSaveLocation. Free functions: they only read slurm.conf's settings.
//
// Thread safety: they read slurmctld's slurm_conf, so they are called from slurmctld's calls into the plugin
// (never from the plugin's own threads, which are handed the paths they write).
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace rackwise::slurm {

// The cluster description: rackwise.yaml in slurm.conf's folder (SLURM_CONF, else /etc/slurm, when slurmctld was
// not told which slurm.conf).
std::string DescriptionPath();
// StateSaveLocation/`name`, the one folder for every file the plugin keeps; "" when slurm.conf sets none.
std::string StateSavePath(absl::string_view name);

}  // namespace rackwise::slurm
