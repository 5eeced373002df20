// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm's internal headers (22.05 or 24.11), included in one place and LAST: slurm_xlator.h turns common words
// (info, error, list_next, bit_alloc, ...) into macros, so every C++ and rackwise header must come first.
// slurm_compat.h then papers over what differs between the two versions.
#pragma once

// slurm_xlator.h must precede the other Slurm headers (it renames their symbols): no include sorting here.
// clang-format off
extern "C" {
#include "config.h"

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
// extra_constraints.h (pulled in by node_conf.h and slurmctld.h) names a struct member `operator`.
#define operator slurm_operator
#endif
#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/plugin.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
#include "src/interfaces/gres.h"
#include "src/interfaces/select.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#undef operator
#else
#include "src/common/gres.h"
#include "src/common/select.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#endif
}
// clang-format on

#include "slurm_compat.h"
