#!/usr/bin/env bash
# Every job starts where rackwise put it, in a default partition that mixes HGX nodes and NVL72 trays: a real
# slurmctld and 52 real slurmd on 127.0.0.1 (mixed_cluster.yaml), GPU power limits held by the SPANK plugin
# through a fake NVML per node, and an independent sampler (live_checker.py: its own reading of the description
# and of `scontrol show job -d`, no rackwise code) watching every rack and power domain against its cap less the
# reserve, and every GPU held once, several times a second.
# The stream: every job shape (--gpus, -N with --gpus-per-node, --gpu-watts, --nvlink required/preferred/none)
# on an empty cluster (where slurmctld offers every node at once), a slurmctld restart while jobs run, a rack
# cap lowered by reconfigure, a truncated rackwise.yaml (kept out by slurmctld and by the nodes) with a
# top-priority probe submitted meanwhile, and the file fixed again. At the end: no sample over a cap, every
# `required` job in the fewest NVLink domains any node type of its partition could give it (the sampler's own
# count), every job completed, no node drained, and every GPU's power limit back where it was.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins RW_FAKE_NVML=<build>/tests/fake_nvml/libnvidia-ml.so.1 \
#        test_mixed_partition.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
[[ -f ${RW_FAKE_NVML:-} ]] || { echo "FAIL: RW_FAKE_NVML (the fake libnvidia-ml.so.1) not set or missing" >&2; exit 1; }
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import yaml' 2>/dev/null ||
  { echo "FAIL: /usr/bin/python3 with yaml (python3-yaml) is needed for the sampler" >&2; exit 1; }

RW_EXTRA_CONF=$'PrologFlags=Alloc\nMinJobAge=3600' RW_SPANK=required rw_setup select/rackwise_cons_tres \
  "$here/mixed_cluster.yaml"
yaml=$RW_TMP/etc/rackwise.yaml
rw_enforce_limits "$yaml"
# Boards: HGX 200-700 W, GB200 200-1,200 W, each at its maximum, as the NVML stand-in reports them.
board_max() { [[ $1 == nvl* ]] && echo 1200000 || echo 700000; }
for n in "${RW_NODES[@]}"; do
  mkdir -p "$RW_TMP/nvml/$n"
  cp "$RW_FAKE_NVML" "$RW_TMP/nvml/$n/libnvidia-ml.so.1"
  max=$(board_max "$n")
  for ((g = 0; g < RW_NODE_GPUS[$n]; g++)); do echo "gpu GPU-$n-$g 200000 $max $max $max 80000"; done \
    >"$RW_TMP/nvml/$n/fake_nvml.state"
done
cp "$yaml" "$RW_TMP/rackwise.yaml.good"
rw_start || exit 1

rw_start_sampler "$yaml"
jobs_file=$RW_JOBS_FILE samples=$RW_SAMPLES stop=$RW_SAMPLER_STOP sampler=$RW_SAMPLER
hgx_nodes=$(printf '%s\n' "${RW_NODES[@]}" | grep '^gpu' | paste -sd,)

# submit SECONDS GPUS PER_NODE WATTS LOCALITY PARTITION_NODES SBATCH_ARGS...: a job that sleeps SECONDS; its
# shape goes to the sampler's job file (PARTITION_NODES "-" for the default partition of every node).
submit() {
  local seconds=$1 gpus=$2 per_node=$3 watts=$4 locality=$5 part=$6 id
  shift 6
  id=$(sbatch --parsable -o /dev/null -e /dev/null -D "$RW_TMP" -t 5 "$@" --wrap "sleep $seconds" \
    2>"$RW_TMP/sbatch.err" | cut -d';' -f1)
  if [[ -z $id ]]; then
    rw_fail "sbatch $* refused: $(cat "$RW_TMP/sbatch.err")"
    return
  fi
  echo "$id $gpus $per_node $watts $locality $part" >>"$jobs_file"
  echo "$id"
}
# idx=limit_mw of a node's fake GPUs, e.g. "0=700000 1=700000 ...".
limits_of() {
  awk '$1 == "gpu" {printf "%s%d=%s", (i ? " " : ""), i, $6; i++}' "$RW_TMP/nvml/$1/fake_nvml.state"
}
# The GPUs of a job declaring WATTS whose limit is not that (a board whose maximum is below needs none), e.g.
# " nvl02-t17:0=1200000"; empty when every one holds it.
job_limits_off() {
  local id=$1 watts=$2 n idx g limit max bad=""
  while read -r n idx; do
    for g in ${idx//,/ }; do
      limit=$(awk -v g="$g" '$1 == "gpu" {if (i == g) print $6; i++}' "$RW_TMP/nvml/$n/fake_nvml.state")
      max=$(awk -v g="$g" '$1 == "gpu" {if (i == g) print $4; i++}' "$RW_TMP/nvml/$n/fake_nvml.state")
      ((max <= watts * 1000 || limit == watts * 1000)) || bad+=" $n:$g=$limit"
    done
  done < <(rw_job_gpus "$id")
  echo "$bad"
}
job_limits_set() { [[ -z $(job_limits_off "$1" "$2") ]]; }
# Every GPU of a running job declaring WATTS comes to hold that limit: RUNNING in slurmctld comes before slurmd
# has run the job's prolog on the node, so this waits on the boards' state.
check_job_limits() {
  local id=$1 watts=$2
  rw_wait_for 30 job_limits_set "$id" "$watts" && rw_ok "job $id's GPUs are held to its $watts W" ||
    rw_fail "job $id's GPUs not at $watts W:$(job_limits_off "$id" "$watts")"
}
# scontrol reconfigure, then wait until slurmctld has said what it made of rackwise.yaml (REGEX).
reconfigure_and_wait() {
  local re=$1 before
  before=$(grep -c -- "$re" "$RW_TMP/log/slurmctld.log")
  scontrol reconfigure
  rw_wait_log "$re" 60 $((before + 1)) || rw_fail "no '$re' after reconfigure"
}
wait_running() {
  local id
  for id in "$@"; do
    rw_wait_state "$id" RUNNING 90 || rw_fail "job $id not running: $(rw_state "$id") '$(rw_reason "$id")'"
  done
}

# --- Wave 1: every shape on the empty cluster, where slurmctld offers every node of the partition at once --------
a=$(submit 45 48 0 0 required - --gpus=48 --nvlink=required)
b=$(submit 45 64 0 700 required - --gpus=64 --gpu-watts=700 --nvlink=required)
c=$(submit 30 16 0 0 required - --gpus=16 --nvlink=required)
d=$(submit 30 1 0 250 preferred - --gpus=1 --gpu-watts=250)           # under a GB200 tray's floor: HGX only
e=$(submit 30 16 8 0 required - -N 2 --gpus-per-node=8 --nvlink=required)  # 8 per node: HGX only
f=$(submit 30 12 0 0 preferred - --gpus=12)
g=$(submit 30 8 0 0 none - --gpus=8 --nvlink=none)
h=$(submit 30 12 4 0 preferred - -N 3 --gpus-per-node=4)
i=$(submit 30 24 0 700 required "$hgx_nodes" -p hgx --gpus=24 --gpu-watts=700 --nvlink=required)
wait_running "$a" "$b" "$d" "$e" "$i"
rw_wait_samples 2
check_job_limits "$b" 700
check_job_limits "$d" 250

# --- A slurmctld restart while they run, then a 72-GPU job only one rack can power, and the HGX row pressed -----
rw_stop_ctld
rw_start_ctld || rw_die "slurmctld did not come back"
k=$(submit 20 72 0 1300 required - --gpus=72 --gpu-watts=1300 --nvlink=required)
hgx_jobs=()
for s in 1 2 3 4 5 6; do hgx_jobs+=("$(submit 20 8 0 0 preferred "$hgx_nodes" -p hgx --gpus=8)"); done
r1=$(submit 20 16 0 0 required - --gpus=16 --nvlink=required)
w1=$(submit 20 32 0 400 required - --gpus=32 --gpu-watts=400 --nvlink=required)
rw_wait_samples 2

# --- A rack cap lowered at run time: h04 from 41 to 25 kW (13.75 kW above idle: 14 GPUs at 962.5 W) ------------
sed -i '/name: h04/,/power_domain/ s/power_cap_kw: 41/power_cap_kw: 25/' "$yaml"
reconfigure_and_wait 'rackwise: loaded .*rackwise.yaml'
low=()
for s in 1 2 3; do low+=("$(submit 20 8 0 0 preferred "$hgx_nodes" -p hgx --gpus=8)"); done

# --- A truncated rackwise.yaml on controller and nodes: kept out; a top-priority probe still runs ---------------
head -c 700 "$RW_TMP/rackwise.yaml.good" >"$yaml"
reconfigure_and_wait 'rackwise: rejected the cluster description'
probe=$(submit 15 1 0 500 preferred - --gpus=1 --gpu-watts=500)
undeclared=$(submit 15 4 0 0 preferred - --gpus=4 -w nvl02-t18)
scontrol update JobId="$probe" Priority=4000000000 2>/dev/null || scontrol top "$probe" 2>/dev/null
rw_wait_state "$probe" RUNNING 120 && rw_ok "the probe runs while rackwise.yaml is broken" ||
  rw_fail "probe $probe not running while the file is broken: $(rw_state "$probe") '$(rw_reason "$probe")'"
check_job_limits "$probe" 500
rw_wait_for 120 rw_started "$undeclared" ||
  rw_fail "job $undeclared never started: $(scontrol show job "$undeclared" | grep -o 'JobState=[A-Z_]* Reason=[^ ]*')"
cp "$RW_TMP/rackwise.yaml.good" "$yaml"
sed -i '/name: h04/,/power_domain/ s/power_cap_kw: 41/power_cap_kw: 25/' "$yaml"
reconfigure_and_wait 'rackwise: loaded .*rackwise.yaml'

# --- The stream drains: every job completes, nothing stuck ----------------------------------------------------
for ((t = 0; t < 1500; t++)); do
  rw_check_ctld
  [[ -z $(squeue -h) ]] && break
  sleep 0.2
done
[[ -z $(squeue -h) ]] && rw_ok "the queue drained" ||
  rw_fail "jobs stuck: $(squeue -h -o '%i %T %r' | paste -sd';')"
rw_wait_samples 1
touch "$stop"
wait "$sampler" 2>/dev/null

bad=""
while read -r id _; do
  state=$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
  [[ $state == JobState=COMPLETED ]] || bad+=" $id:${state#JobState=}"
done <"$jobs_file"
[[ -z $bad ]] && rw_ok "all $(wc -l <"$jobs_file") jobs completed" || rw_fail "jobs not completed:$bad"
drained=$(sinfo -h -R -o '%N: %E' 2>/dev/null)
[[ -z $drained ]] && rw_ok "no node drained" || rw_fail "nodes drained: $drained"
grep -q FINDING "$samples" && rw_fail "the sampler found broken promises: $(grep FINDING "$samples" | head -5)" ||
  rw_ok "$(rw_samples_taken) samples: no rack or power domain over its usable cap, no GPU held twice"
if /usr/bin/python3 "$here/live_checker.py" domains "$RW_TMP/rackwise.yaml.good" "$jobs_file" "$samples.seen" \
  >"$RW_TMP/domains.txt"; then
  rw_ok "every required job in its fewest NVLink domains ($(grep -c ': ok' "$RW_TMP/domains.txt") judged)"
else
  rw_fail "required jobs spread: $(grep 'TOO MANY' "$RW_TMP/domains.txt" | paste -sd';')"
fi
grep -q 'started outside' "$RW_TMP/log/slurmctld.log" &&
  rw_fail "slurmctld.log: $(grep 'started outside' "$RW_TMP/log/slurmctld.log" | head -3)" ||
  rw_ok "no job started outside its placement"
unrestored=""
for n in "${RW_NODES[@]}"; do
  want=$(board_max "$n")
  for kv in $(limits_of "$n"); do [[ ${kv#*=} == "$want" ]] || unrestored+=" $n:$kv"; done
done
[[ -z $unrestored ]] && rw_ok "every GPU's power limit restored" || rw_fail "limits not restored:$unrestored"
rw_check_never
((RW_FAILS == 0)) && rw_log "PASS" || rw_log "FAILED: $RW_FAILS checks"
exit $((RW_FAILS != 0))
