#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checks that the plugins' dynamic symbol tables define exactly what Slurm looks up: for the select plugin,
# the names of node_select_syms in Slurm's own select.c (22.05: src/common/, newer: src/interfaces/) plus plugin_name/type/version and
# init/fini; for the SPANK plugin, its fixed names. Anything else (core classes, absl, protobuf) must be local.
# Usage: check_exports.sh SELECT_SO SPANK_SO SLURM_SRC
set -euo pipefail
select_so=$1 spank_so=$2 src=$3
fail=0

defined() { nm -D --defined-only "$1" | awk '{print $NF}' | sed 's/@.*//' | sort -u; }

select_c=$src/src/common/select.c
[[ -f $select_c ]] || select_c=$src/src/interfaces/select.c
expected_select=$(
  {
    sed -n '/^\(static \)\?const char \*node_select_syms\[\] = {/,/^};/p' "$select_c" | grep -o '"[a-z_]*"' | tr -d '"'
    printf '%s\n' plugin_name plugin_type plugin_version init fini
  } | sort -u
)
n=$(grep -c . <<<"$expected_select")
# node_select_syms differs by version (22.05: plugin_id + 36 calls; 24.11: plugin_id + 31; 25.05 onwards fewer), so
# the parse is checked by the names every version has, not by a count.
for must in plugin_id select_p_node_init select_p_job_test select_p_job_fini select_p_reconfigure; do
  grep -qx "$must" <<<"$expected_select" || { echo "FAIL: parsed $n names from $select_c, without $must"; exit 1; }
done

compare() {
  local what=$1 got=$2 want=$3
  local extra missing
  extra=$(comm -23 <(echo "$got") <(echo "$want"))
  missing=$(comm -13 <(echo "$got") <(echo "$want"))
  if [[ -n $extra ]]; then echo "FAIL: $what exports more than Slurm needs:"; echo "$extra" | head -20; fail=1; fi
  if [[ -n $missing ]]; then echo "FAIL: $what lacks:"; echo "$missing"; fail=1; fi
  [[ -z $extra && -z $missing ]] && echo "ok: $what exports exactly $(grep -c . <<<"$want") symbols"
}
compare "$(basename "$select_so")" "$(defined "$select_so")" "$expected_select"
compare "$(basename "$spank_so")" "$(defined "$spank_so")" \
  "$(printf '%s\n' plugin_name plugin_type plugin_version spank_plugin_version slurm_spank_init \
     slurm_spank_init_post_opt slurm_spank_job_prolog slurm_spank_job_epilog | sort -u)"

# The SPANK plugin is loaded beside the select plugin (slurmd, sbatch, srun): a second copy of the description's
# protobuf schema in it would abort those processes at load time ("File already exists in database").
if grep -qa 'rackwise/v1/cluster.proto' "$spank_so"; then echo "FAIL: the SPANK plugin embeds cluster.proto"; fail=1; fi

# Slurm's symbols must stay unresolved (found in slurmctld/libslurmfull at load time), not linked in.
if nm -D "$select_so" | grep -q ' T slurm_'; then echo "FAIL: select plugin defines slurm_* symbols"; fail=1; fi
if readelf -d "$select_so" | grep -q 'libslurm'; then echo "FAIL: select plugin links libslurm"; fail=1; fi
if readelf -d "$select_so" | grep -q 'BIND_NOW\|FLAGS_1.*NOW'; then echo "FAIL: linked with -z now"; fail=1; fi
exit $fail
