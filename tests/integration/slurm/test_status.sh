#!/usr/bin/env bash
# `rackwise status` reads the ledger select/rackwise_cons_tres publishes: while a job runs,
# StateSaveLocation/rackwise_state.yaml holds it and the job's rack shows its draw (idle + 8 GPUs) and one job;
# once it is cancelled, the file is rewritten and the rack is back to idle. Real slurmctld and slurmd.
# Environment: RW_PLUGIN_DIR (the built plugins), RACKWISE_CLI (the built rackwise).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
[[ -x ${RACKWISE_CLI:-} ]] || { echo "FAIL: RACKWISE_CLI not set" >&2; exit 1; }

rw_setup select/rackwise_cons_tres "$here/small_cluster.yaml" || exit 1
rw_start || exit 1
state=$RW_TMP/state/rackwise_state.yaml
cluster=$RW_TMP/etc/rackwise.yaml

# published_is yes|no ID: the published file mentions job ID (yes), or is there without it (no).
published_is() {
  [[ -f $state ]] || return 1
  if grep -Eq "id: ['\"]?${2}['\"]?\$" "$state"; then [[ $1 == yes ]]; else [[ $1 == no ]]; fi
}
# Waits until the published file does (yes) or does not (no) mention job $2; fails at once if slurmctld died.
wait_published() {
  rw_wait_for 20 published_is "$1" "$2" && return 0
  rw_fail "$state never showed job $2 as $1 (content: $(cat "$state" 2>/dev/null))"
  return 1
}

# One rack's row of the table: NAME DRAW MEASURED CAP USABLE HEADROOM USE% JOBS GPUS.
rack_row() { "$RACKWISE_CLI" status --cluster "$cluster" --state "$state" | awk -v r="$1" '$1 == r'; }

job=$(rw_submit -N1 --gres=gpu:8 -p all)
[[ -n $job ]] || { rw_fail "sbatch refused: $(cat "$RW_TMP/sbatch.err")"; exit 1; }
rw_wait_state "$job" RUNNING 30 || { rw_fail "job $job not RUNNING: $(rw_state "$job") $(rw_reason "$job")"; exit 1; }
rack=$(rw_job_racks "$job")
wait_published yes "$job" || exit 1
row=$(rack_row "$rack")
# Two idle nodes (2 x 2.5 kW) + 8 GPUs at (10200 - 2500) / 8 W = 12.7 kW; one job; 8 of 16 GPUs.
read -r _ draw _ _ _ _ _ jobs gpus <<<"$row"
if [[ $draw == "12.7" && $jobs == "1" && $gpus == "8/16" ]]; then
  rw_ok "status while job $job runs: $row"
else
  rw_fail "status while job $job runs on $rack: want draw 12.7 kW, 1 job, 8/16 GPUs; got: $row"
fi
"$RACKWISE_CLI" status --cluster "$cluster" --state "$state" --json | grep -q '"allocations": 1' ||
  rw_fail "status --json does not count the job"

scancel "$job"
wait_published no "$job" || exit 1
read -r _ draw _ _ _ _ _ jobs gpus <<<"$(rack_row "$rack")"
if [[ $draw == "5.0" && $jobs == "0" ]]; then rw_ok "after scancel: $rack back to idle"; else
  rw_fail "after scancel: want 5.0 kW and no job on $rack, got draw $draw jobs $jobs"; fi
((RW_FAILS == 0))
