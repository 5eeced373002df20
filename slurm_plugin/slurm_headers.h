// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm 22.05's internal headers, included in one place and LAST: slurm_xlator.h turns common words
// (info, error, list_next, bit_alloc, ...) into macros, so every C++ and rackwise header must come first.
#pragma once

// clang-format off: slurm_xlator.h must precede the other Slurm headers (it renames their symbols).
extern "C" {
#include "config.h"

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/gres.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/plugin.h"
#include "src/common/run_in_daemon.h"
#include "src/common/select.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
}
// clang-format on
