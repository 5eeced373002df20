#!/usr/bin/env bash
# One job stream, two schedulers: plain select/cons_tres with topology/tree (one leaf switch per NVLink domain:
# each HGX node, each NVL rack; on Slurm 24.11, RW_SLURM_PREFIX set, topology/block with one block per NVL rack, on
# the stream's NVL jobs only) and select/rackwise_cons_tres, each with its defaults, on a fresh real cluster
# (compare_cluster.yaml: 22 slurmd on 127.0.0.1).
#
# Both runs see the same sequence of decisions: the stream is a list of waves; each wave is submitted held
# (sbatch -H) and released at once, and the next step waits for the state, not for time: until every job has been
# considered (none held or without a pending reason) and two backfill cycles have run since. Jobs run until the
# script ends them (a flag file per group of jobs), so what runs when each job is tried depends on the stream,
# never on how fast the machine is. The stream is repeated RW_COMPARE_REPS times (default 3) on the same cluster,
# and the sums are judged.
#
# An independent sampler (live_checker.py) reads what runs from `scontrol show job -d` throughout and judges
# every rack and power domain against its cap, and, at the end, every job's NVLink domains against the fewest the
# cluster could give it. Prints a Markdown table: jobs at their fewest domains, rail alignment, findings over a
# cap, and sdiag's main and backfill cycle times.
# Fails if rackwise ever puts a rack over its cap, leaves a multi-node job off its rails when its rack could
# align it; whether rackwise puts more jobs in their fewest NVLink domains than the baseline is reported (it fails
# only with RW_STRICT_LOCALITY=1); timing is reported (a ratio above RW_MAX_CYCLE_RATIO, default 1.2, fails only with
# RW_STRICT_TIMING=1: two shared cores are noisy).
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins compare.sh [report.md]
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
report=${1:-}
results=$(mktemp -d /tmp/rackwise-compare.XXXXXX)
trap 'rw_cleanup; rm -rf "$results"' EXIT
cluster_yaml=$here/compare_cluster.yaml
reps=${RW_COMPARE_REPS:-3}

# The stream: waves, and between them the groups of jobs to end. A job is "group:partition:gpus:limit_minutes";
# gpus N is --gpus=N, NxK is -N N --gpus-per-node=K. An `end` step ends every job of the group named; a group is
# only ended once all its jobs have run (a job that could start only after its own group ended would run for no
# time). What it exercises: two 24-GPU jobs leave 12 GPUs in each NVL rack; a 20-GPU job with a 20-minute limit
# then finds no whole domain while the blockers' 2-minute limits end well within what spreading would cost it
# (rackwise's default rule waits; a placement that spreads takes both racks); a 36-GPU job needs a whole rack
# after that; h02's cap holds 12 busy GPUs, so an 8-GPU job beside another must wait under rackwise and a
# 16-GPU job then finds two whole nodes only later; multi-node partial jobs test the rails.
stream=(
  "wave A:nvl:24:2 A:nvl:24:2 B:hgx:4:10 B:hgx:4:10 B:h02:8:10"
  "wave C:nvl:20:20 C:hgx:2x4:10 C:h02:8:10"
  "end A"
  "wave D:nvl:36:10 D:hgx:16:10"
  "end B"
  "end C"
  "wave E:nvl:48:10 E:hgx:8:10 E:nvl:8:10 E:hgx:2x2:10"
  "end D"
  "end E"
)

# Rack membership of compare_cluster.yaml (lib.sh's helpers know cluster.yaml's).
rw_rack_nodes() {
  case $1 in
    h01) echo gpu01 gpu02 ;;
    h02) echo gpu05 gpu06 ;;
    nvl01 | nvl02) printf "$1-t%02d " $(seq 1 9) ;;
  esac
}
partition_nodes() {
  case $1 in
    hgx) printf '%s\n' "${RW_NODES[@]}" | grep '^gpu' | paste -sd, ;;
    h02) printf '%s\n' "${RW_NODES[@]}" | grep -E '^gpu0[5-8]$' | paste -sd, ;;
    nvl) printf '%s\n' "${RW_NODES[@]}" | grep '^nvl' | paste -sd, ;;
  esac
}

# settle: waits until the scheduler has done all it will do with the cluster as it is: no job is held or
# pending without a reason (not yet considered), and either none is pending or two backfill cycles have run
# since (the main scheduler stops at a partition's first job that cannot start; backfill tries the rest, and
# runs no cycle while nothing is pending).
settle() {
  local c0 t reasons
  c0=$(rw_backfill_cycles)
  for ((t = 0; t < 900; t++)); do
    rw_check_ctld
    # A job the scheduler can never run (BadConstraints) waits for nothing; backfill may not even cycle for it.
    reasons=$(squeue -h -t PD -o '%r' | grep -vx BadConstraints)
    if [[ -z $reasons ]] || { ! grep -qxE 'None|JobHeldUser' <<<"$reasons" && (($(rw_backfill_cycles) >= c0 + 2)); }; then
      return 0
    fi
    sleep 0.2
  done
  rw_fail "the scheduler did not settle in 180 s"
  return 1
}

# record OUT: every running job not yet recorded, its GPUs ("job node idx,..."), and who held GPUs then.
record() {
  local out=$1 running j
  running=$(squeue -h -t R -o %i)
  for j in $running; do
    grep -q "^$j " "$out/placements" 2>/dev/null && continue
    rw_job_gpus "$j" | sed "s/^/$j /" >>"$out/placements"
    echo "$j" $running >>"$out/holders"
  done
}

# drop_never_runnable OUT: cancels each job the scheduler says can never run (reason BadConstraints; on 24.11,
# cons_tres with topology/block finds no block for a --gpus job wider than one block's GPUs) and lists it in
# OUT/refused: its group's end would otherwise wait for it, and the summary counts it as not placed.
drop_never_runnable() {
  local out=$1 j
  for j in $(squeue -h -t PD -o '%i %r' | awk '$2 == "BadConstraints" {print $1}'); do
    rw_log "$(basename "$out"): job $j can never run here (BadConstraints): cancelled, counted as not placed"
    echo "$j BadConstraints" >>"$out/refused"
    scancel "$j"
  done
}

# run_wave OUT REP SPECS...: submits the wave held, releases it at once, settles.
run_wave() {
  local out=$1 rep=$2 spec group part asked gpus limit args id ids=() nodes per
  shift 2
  for spec in "$@"; do
    IFS=: read -r group part asked limit <<<"$spec"
    gpus=$asked
    [[ -n ${RW_SLURM_PREFIX:-} && $part != nvl ]] && continue  # 24.11: the NVL part of the stream (see below)
    nodes=0 per=0
    if [[ $gpus == *x* ]]; then
      nodes=${gpus%x*} per=${gpus#*x}
      args=(-N "$nodes" --gpus-per-node="$per")
      gpus=$((nodes * per))
    else
      args=(--gpus="$gpus")
    fi
    id=$(sbatch -H --parsable -o /dev/null -e /dev/null -D "$RW_TMP" -p "$part" "${args[@]}" -t "$limit" \
      --wrap "while [ ! -e $results/flags/end.$rep.$group ]; do sleep 0.5; done" 2>>"$out/sbatch.err" | cut -d';' -f1)
    [[ -n $id ]] || { rw_fail "sbatch refused $spec: $(tail -1 "$out/sbatch.err")"; continue; }
    ids+=("$id")
    echo "$id $part $asked" >>"$out/jobs"
    echo "$id $gpus $per 0 default $(partition_nodes "$part") $nodes" >>"$RW_JOBS_FILE"
    echo "$id" >>"$results/flags/group.$rep.$group"
  done
  ((${#ids[@]})) && scontrol release "$(IFS=,; echo "${ids[*]}")"
  settle && drop_never_runnable "$out" && record "$out"
}

# end_groups OUT REP GROUPS...: ends every job of the groups, waits until they are gone, settles.
end_groups() {
  local out=$1 rep=$2 g j t ids=()
  shift 2
  for g in "$@"; do
    touch "$results/flags/end.$rep.$g"
    [[ -f $results/flags/group.$rep.$g ]] && ids+=($(cat "$results/flags/group.$rep.$g"))
  done
  for j in "${ids[@]}"; do
    for ((t = 0; t < 600; t++)); do
      [[ -z $(squeue -h -j "$j" -t PD,R,CG,CF 2>/dev/null) ]] && break
      sleep 0.2
    done
  done
  settle && record "$out"
}

# run_stream NAME SELECT [TOPOLOGY_CONF]
run_stream() {
  local name=$1 select=$2 topo=${3:-} out=$results/$1 rep step
  mkdir -p "$out" "$results/flags"
  rm -f "$results"/flags/*
  : >"$out/placements"
  : >"$out/holders"
  : >"$out/jobs"
  rw_setup "$select" "$cluster_yaml" "$topo"
  trap 'rw_cleanup; rm -rf "$results"' EXIT   # rw_setup installs its own trap; keep ours
  rw_start || { rw_fail "$name: cluster did not start"; rw_cleanup; return 1; }
  rw_start_sampler "$RW_TMP/etc/rackwise.yaml"
  sdiag -r >/dev/null
  local t0=$SECONDS
  for ((rep = 1; rep <= reps; rep++)); do
    for step in "${stream[@]}"; do
      case $step in
        wave\ *) run_wave "$out" "$rep" ${step#wave } ;;
        end\ *) end_groups "$out" "$rep" ${step#end } ;;
      esac
    done
    [[ -z $(squeue -h) ]] || rw_fail "$name: repetition $rep left jobs in the queue: $(squeue -h -o '%i %T %r' | paste -sd' ')"
  done
  echo $((SECONDS - t0)) >"$out/makespan"
  sdiag >"$out/sdiag"
  # One more sample after the last job, so that the sampler has seen everything; then stop it.
  local n
  n=$(grep -c '^sample' "$RW_SAMPLES")
  for ((t = 0; t < 100; t++)); do (($(grep -c '^sample' "$RW_SAMPLES") > n + 1)) && break; sleep 0.2; done
  touch "$RW_SAMPLER_STOP"
  wait "$RW_SAMPLER" 2>/dev/null
  cp "$RW_JOBS_FILE" "$out/checker.jobs"
  cp "$RW_SAMPLES" "$out/samples"
  cp "$RW_SAMPLES.seen" "$out/seen"
  /usr/bin/python3 "$here/live_checker.py" locality "$cluster_yaml" "$out/checker.jobs" "$out/seen" >"$out/locality"
  rw_cleanup
}

# could_align OUT JOB NODES K: whether, when JOB was first seen running, the one rack it landed in had NODES
# nodes with the same K GPU indices free. Conservative: every job that may still have held GPUs then (running
# or completing at that sample or the one before) counts as busy, so a true answer means the scheduler had an
# aligned choice in the same rack and did not take it.
could_align() {
  local out=$1 job=$2 want=$3 k=$4 racks members
  racks=$(awk -v j="$job" '$1==j{print $2}' "$out/placements" | while read -r n; do rw_rack_of "$n"; done | sort -u)
  [[ $(wc -l <<<"$racks") -eq 1 ]] || return 1
  members=$(rw_rack_nodes "$racks")
  awk -v j="$job" -v want="$want" -v k="$k" -v members="$members" '
    FNR == 1 { file++ }
    file == 1 && $1 == j { for (i = 2; i <= NF; i++) if ($i != j) holder[$i] = 1 }
    file == 2 && ($1 in holder) { n = split($3, a, ","); for (i = 1; i <= n; i++) busy[$2, a[i]] = 1 }
    END {
      m = split(members, node, " ")
      for (s = 0; s < 256; s++) {
        c = 0; for (b = 0; b < 8; b++) if (int(s / 2^b) % 2) c++
        if (c != k) continue
        free_on = 0
        for (x = 1; x <= m; x++) {
          ok = 1; for (b = 0; b < 8; b++) if (int(s / 2^b) % 2 && busy[node[x], b]) ok = 0
          free_on += ok
        }
        if (free_on >= want) exit 0
      }
      exit 1
    }' "$out/holders" "$out/placements"
}

# summarize NAME -> one table row (and sets globals for the checks)
summarize() {
  local name=$1 out=$results/$1
  local jobs=0 domains_sum=0 multi=0 aligned=0 avoidable=0 placed=0
  while read -r id part gpus; do
    jobs=$((jobs + 1))
    local nodes
    nodes=$(awk -v j="$id" '$1==j{print $2}' "$out/placements")
    [[ -z $nodes ]] && continue
    placed=$((placed + 1))
    domains_sum=$((domains_sum + $(for n in $nodes; do rw_domain_of "$n"; done | sort -u | wc -l)))
    # Rail alignment matters for jobs on more than one node that use part of each node.
    local n_nodes
    n_nodes=$(wc -w <<<"$nodes")
    if ((n_nodes > 1)) && awk -v j="$id" '$1==j{ if (split($3,a,",") < 8 && $2 ~ /^gpu/) p=1 } END{exit !p}' "$out/placements"; then
      multi=$((multi + 1))
      # Aligned: every node uses a subset of the rails (GPU indices) of the node that uses the most, so
      # GPU i of every node talks over rail i (an 8+4 split on rails 0-7 and 0-3 is aligned).
      if awk -v j="$id" '$1==j{ n = split($3, a, ","); for (k = 1; k <= n; k++) u[a[k]] = 1; if (n > m) m = n }
                         END{ c = 0; for (k in u) c++; exit !(c == m) }' "$out/placements"; then
        aligned=$((aligned + 1))
      else
        local why="no rack of its could align it then"
        if [[ $gpus == *x* ]] && could_align "$out" "$id" "${gpus%x*}" "${gpus#*x}"; then
          avoidable=$((avoidable + 1))
          why="AVOIDABLE: its rack had ${gpus%x*} nodes with the same ${gpus#*x} GPU indices free"
        fi
        echo "$name: job $id ($part $gpus) not rail-aligned: $(awk -v j="$id" '$1==j{printf "%s:%s ", $2, $3}' "$out/placements")($why)" >&2
      fi
    fi
  done <"$out/jobs"
  # The independent checker's judgement: jobs at their fewest NVLink domains, and findings over a cap.
  local at_min seen over
  read -r at_min seen < <(awk '/^at fewest/{print $3, $5}' "$out/locality")
  grep ': MORE$' "$out/locality" | sed "s/^/$name: /" >&2
  over=$(grep -c '^FINDING' "$out/samples")
  local main_mean bf_mean main_cycles bf_cycles main_depth bf_depth main_per bf_per
  main_mean=$(awk '/Main schedule statistics/{f=1} f&&/Mean cycle:/{print $3; exit}' "$out/sdiag")
  bf_mean=$(awk '/Backfilling stats/{f=1} f&&/Mean cycle:/{print $3; exit}' "$out/sdiag")
  main_cycles=$(awk '/Main schedule statistics/{f=1} f&&/Total cycles:/{print $3; exit}' "$out/sdiag")
  bf_cycles=$(awk '/Backfilling stats/{f=1} f&&/Total cycles:/{print $3; exit}' "$out/sdiag")
  # Per job considered: the mean cycle over the mean number of jobs a cycle looked at (main) or tested with
  # job_test (backfill). The queues differ (rackwise holds jobs back for power), so this is the fairer cost.
  main_depth=$(awk '/Main schedule statistics/{f=1} f&&/Mean depth cycle:/{print $4; exit}' "$out/sdiag")
  bf_depth=$(awk '/Backfilling stats/{f=1} f&&/Depth Mean \(try depth\):/{print $5; exit}' "$out/sdiag")
  main_per=$(awk -v c="${main_mean:-0}" -v d="${main_depth:-0}" 'BEGIN{printf "%.0f", (d > 0 ? c / d : 0)}')
  bf_per=$(awk -v c="${bf_mean:-0}" -v d="${bf_depth:-0}" 'BEGIN{printf "%.0f", (d > 0 ? c / d : 0)}')
  printf '| %s | %d/%d | %s | %s/%s | %d/%d | %s | %s | %s (%s) | %s (%s) | %s / %s |\n' "$name" "$placed" "$jobs" \
    "$(awk -v s="$domains_sum" -v n="$placed" 'BEGIN{printf "%.2f", n ? s/n : 0}')" "${at_min:-0}" "${seen:-0}" \
    "$aligned" "$multi" "$over" "$(cat "$out/makespan")" "${main_mean:-?}" "${main_cycles:-?}" "${bf_mean:-?}" \
    "${bf_cycles:-?}" "$main_per" "$bf_per"
  local v=${name//[^a-z]/_}
  eval "${v}_over=$over ${v}_main=${main_mean:-0} ${v}_bf=${bf_mean:-0} ${v}_mainper=$main_per ${v}_bfper=$bf_per"
  eval "${v}_atmin=${at_min:-0} ${v}_seen=${seen:-0} ${v}_jobs=$jobs ${v}_aligned=$aligned ${v}_multi=$multi"
  eval "${v}_avoidable=$avoidable"
}

topo=$results/topology.conf
{
  for n in gpu01 gpu02 gpu05 gpu06; do echo "SwitchName=leaf-$n Nodes=$n"; done
  echo "SwitchName=leaf-nvl01 Nodes=nvl01-t[01-09]"
  echo "SwitchName=leaf-nvl02 Nodes=nvl02-t[01-09]"
  echo "SwitchName=su1 Switches=leaf-gpu0[1-2],leaf-gpu0[5-6]"
  echo "SwitchName=su2 Switches=leaf-nvl0[1-2]"
  echo "SwitchName=spine Switches=su[1-2]"
} >"$topo"

base=cons_tres_tree
if [[ -n ${RW_SLURM_PREFIX:-} ]]; then
  # Slurm 24.11's anchor: topology/block with one block per NVL rack (BlockSizes=9,18: the NVLink domain and both
  # racks). Blocks all have the base size, so single-node HGX domains cannot be blocks beside 9-tray racks
  # (BlockSizes=1 refuses --segment above 1 and multi-node --gpus jobs at submit); the stream is therefore its
  # NVL part, for both schedulers (run_wave skips the rest). Both run with their defaults: no --segment, no
  # --nvlink.
  base=cons_tres_block
  export RW_TOPOLOGY_PLUGIN=topology/block
  {
    echo "BlockName=b-nvl01 Nodes=nvl01-t[01-09]"
    echo "BlockName=b-nvl02 Nodes=nvl02-t[01-09]"
    echo "BlockSizes=9,18"
  } >"$topo"
fi
rw_log "the stream ($reps repetitions) through cons_tres + ${RW_TOPOLOGY_PLUGIN:-topology/tree}"
run_stream "$base" select/cons_tres "$topo"
rw_log "the same stream through rackwise"
run_stream rackwise select/rackwise_cons_tres

table=$(
  echo "| scheduler | jobs placed | NVLink domains per job | jobs at fewest domains (checker) | rail-aligned (multi-node partial) | samples over a cap (checker) | seconds | sdiag main mean cycle, us (cycles) | sdiag backfill mean cycle, us (cycles) | us per job considered, main / backfill |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  summarize "$base"
  summarize rackwise
)
echo "$table"
[[ -n $report ]] && echo "$table" >"$report"

# Checks. Recompute the globals (summarize ran in a subshell above).
summarize "$base" >/dev/null 2>&1
summarize rackwise >/dev/null 2>&1
b=${base//[^a-z]/_}
for v in over main bf mainper bfper atmin seen jobs aligned multi avoidable; do eval "base_$v=\${${b}_$v}"; done
((rackwise_over == 0)) && rw_ok "the checker found no rack or power domain over its cap under rackwise" ||
  rw_fail "the checker found $rackwise_over sample(s) over a cap under rackwise: $(grep -m3 '^FINDING' "$results/rackwise/samples")"
((rackwise_seen == rackwise_jobs)) || rw_fail "rackwise ran $rackwise_seen of $rackwise_jobs jobs"
# Locality: both runs saw the same decisions (waves released together, ends on the script's word), so the
# comparison is of the schedulers: rackwise should put more jobs in their fewest domains, summed over the
# repetitions. Reported; a failure only with RW_STRICT_LOCALITY=1 until ten runs in a row have shown it holds.
if ((rackwise_atmin > base_atmin)); then
  rw_ok "rackwise put more jobs in their fewest NVLink domains than $base ($rackwise_atmin/$rackwise_seen vs $base_atmin/$base_seen)"
elif [[ -n ${RW_STRICT_LOCALITY:-} ]]; then
  rw_fail "rackwise not more local than $base ($rackwise_atmin/$rackwise_seen vs $base_atmin/$base_seen)"
else
  rw_log "note: rackwise not more local than $base ($rackwise_atmin/$rackwise_seen vs $base_atmin/$base_seen):" \
    "reported only (RW_STRICT_LOCALITY=1 fails)"
fi
# Rail alignment: the check is the rule itself: rackwise never leaves a job off its rails when its rack had an
# aligned choice at that moment (could_align, conservative). The counts of both runs are reported.
((rackwise_avoidable == 0)) &&
  rw_ok "rackwise aligned every multi-node partial job whose rack could align it (aligned $rackwise_aligned/$rackwise_multi; $base $base_aligned/$base_multi, $base_avoidable avoidable misses)" ||
  rw_fail "rackwise left $rackwise_avoidable multi-node job(s) off their rails although an aligned choice existed"
ratio=$(awk -v a="$rackwise_mainper" -v b="$base_mainper" 'BEGIN{printf "%.2f", b ? a/b : 0}')
bf_ratio=$(awk -v a="$rackwise_bfper" -v b="$base_bfper" 'BEGIN{printf "%.2f", b ? a/b : 0}')
rw_log "cost per job considered, rackwise/$base: main $ratio, backfill $bf_ratio (limit ${RW_MAX_CYCLE_RATIO:-1.2});" \
  "mean cycles: main $rackwise_main/$base_main us, backfill $rackwise_bf/$base_bf us"
if [[ -n ${RW_STRICT_TIMING:-} ]] &&
  ! awk -v r="$ratio" -v b="$bf_ratio" -v l="${RW_MAX_CYCLE_RATIO:-1.2}" 'BEGIN{exit !(r <= l && b <= l)}'; then
  rw_fail "scheduling cost over the limit"
fi
rw_log "$RW_FAILS failure(s)"
exit $((RW_FAILS > 0))
