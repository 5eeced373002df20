#!/usr/bin/env bash
# Preemption that knows NVLink domains and power: a real slurmctld with PreemptType=preempt/partition_prio and
# PreemptMode=REQUEUE, 52 real slurmd (mixed_cluster.yaml), a low-priority partition and a high-priority one over
# the same nodes. Low-priority jobs fill both NVL72 racks and the HGX row; then a 72-GPU --nvlink=required job (only
# nvl01 can power 72 GPUs) and a 2 x 8-GPU required HGX job (the row cap binds, not the GPUs) arrive in the
# high-priority partition. Each must start, in its fewest NVLink domains, having requeued no more jobs than the
# fewest that make room (live_checker.py's own exhaustive count over what ran before it), with every cap held in
# every sample (the same independent sampler as test_mixed_partition.sh).
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins test_preemption.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
  { echo "FAIL: /usr/bin/python3 with yaml (python3-yaml) is needed for the sampler" >&2; exit 1; }

RW_EXTRA_CONF=$'PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nMinJobAge=3600
PartitionName=lo Nodes=ALL PriorityTier=1 PreemptMode=requeue MaxTime=INFINITE DefaultTime=60 State=UP
PartitionName=hi Nodes=ALL PriorityTier=10 PreemptMode=off MaxTime=INFINITE DefaultTime=60 State=UP' \
  rw_setup select/rackwise_cons_tres "$here/mixed_cluster.yaml"
yaml=$RW_TMP/etc/rackwise.yaml
rw_start || exit 1

rw_start_sampler "$yaml"
jobs_file=$RW_JOBS_FILE samples=$RW_SAMPLES stop=$RW_SAMPLER_STOP sampler=$RW_SAMPLER

# submit GPUS PER_NODE LOCALITY SBATCH_ARGS...: a long sleeper; its shape goes to the sampler's job file.
submit() {
  local gpus=$1 per_node=$2 locality=$3 id
  shift 3
  id=$(sbatch --parsable -o /dev/null -e /dev/null -D "$RW_TMP" -t 30 "$@" --wrap 'sleep 3000' \
    2>"$RW_TMP/sbatch.err" | cut -d';' -f1)
  [[ -n $id ]] || { rw_fail "sbatch $* refused: $(cat "$RW_TMP/sbatch.err")"; return; }
  echo "$id $gpus $per_node 0 $locality -" >>"$jobs_file"
  echo "$id"
}
running_snapshot() {  # "id node:gpus,node:gpus,..." of every running job
  local id
  for id in $(squeue -h -t R -o '%i'); do
    echo "$id $(rw_job_gpus "$id" | awk '{n = split($2, g, ","); printf "%s%s:%d", (NR > 1 ? "," : ""), $1, n}')"
  done
}

# --- Low priority fills both racks (two 32-GPU jobs each) and the HGX row (ten 8-GPU jobs, 80 of the 86 GPUs
# the row can power) ----------------------------------------------------------------------------------------
lo=()
for s in 1 2 3 4; do lo+=("$(submit 32 0 required -p lo --gpus=32 --nvlink=required)"); done
for s in $(seq 1 10); do lo+=("$(submit 8 0 preferred -p lo --gpus=8)"); done
for id in "${lo[@]}"; do
  rw_wait_state "$id" RUNNING 120 || rw_fail "low-priority job $id not running: '$(rw_reason "$id")'"
done
before=$(running_snapshot)
echo "$before" >"$RW_TMP/before.txt"

# --- High priority: 72 GPUs in one rack (only nvl01 can power them), and 2 x 8 GPUs in the capped row ----------
a=$(submit 72 0 required -p hi --gpus=72 --nvlink=required)
rw_wait_state "$a" RUNNING 120 && rw_ok "72-GPU required job $a started by preemption" ||
  rw_fail "72-GPU job $a not running: $(rw_state "$a") '$(rw_reason "$a")'"
after_a=$(running_snapshot)
echo "$after_a" >"$RW_TMP/after_a.txt"
b=$(submit 16 8 required -p hi -N 2 --gpus-per-node=8 --nvlink=required)
rw_wait_state "$b" RUNNING 120 && rw_ok "2 x 8-GPU required job $b started by preemption" ||
  rw_fail "2 x 8-GPU job $b not running: $(rw_state "$b") '$(rw_reason "$b")'"
after_b=$(running_snapshot)
echo "$after_b" >"$RW_TMP/after_b.txt"

# --- Judged: domains, victims against the fewest that make room, caps in every sample ------------------------
rw_wait_samples 2
touch "$stop"
wait "$sampler" 2>/dev/null
racks=$(rw_job_nodes "$a" | sed 's/-t[0-9]*$//' | sort -u | paste -sd,)
[[ $racks == nvl01 ]] && rw_ok "job $a in one NVLink domain, the rack that can power it ($racks)" ||
  rw_fail "job $a on racks '$racks' (want nvl01 alone)"
for step in a b; do
  job=${!step}
  prev=$RW_TMP/before.txt
  [[ $step == b ]] && prev=$RW_TMP/after_a.txt
  now=$RW_TMP/after_$step.txt
  gone=$(comm -23 <(cut -d' ' -f1 "$prev" | sort) <(cut -d' ' -f1 "$now" | sort) | paste -sd,)
  verdict=$(/usr/bin/python3 "$here/live_checker.py" victims "$RW_TMP/etc/rackwise.yaml" "$jobs_file" "$prev" "$job" \
    "${gone:--}" "$(IFS=,; echo "${lo[*]}")")
  [[ $verdict == ok* ]] && rw_ok "job $job: $verdict" || rw_fail "job $job: $verdict"
done
grep -q FINDING "$samples" && rw_fail "the sampler found broken promises: $(grep FINDING "$samples" | head -5)" ||
  rw_ok "$(grep -c '^sample ' "$samples") samples: no rack or power domain over its usable cap, no GPU held twice"
grep -q "rackwise: JobId=$a preempts" "$RW_TMP/log/slurmctld.log" && rw_ok "the plugin chose job $a's victims" ||
  rw_fail "no 'JobId=$a preempts' line in slurmctld.log"
((RW_FAILS == 0)) && rw_log "PASS" || rw_log "FAILED: $RW_FAILS checks"
exit $((RW_FAILS != 0))
