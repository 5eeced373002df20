#!/usr/bin/env bash
# One job stream, two schedulers, in one run: plain select/cons_tres with topology/tree (one leaf switch per
# NVLink domain: each HGX node, each NVL72 rack; on Slurm 24.11, RW_SLURM_PREFIX set, topology/block with one
# block per NVL72 rack and --segment=<trays>, on the stream's NVL72 jobs only) and
# select/rackwise_cons_tres, each on a fresh real cluster
# (cluster.yaml: 44 slurmd on 127.0.0.1). While the stream runs, every job's nodes and GPU indices are read
# from `scontrol show job -d` and every rack's draw is sampled once a second (the description's power model).
# Prints a Markdown table: NVLink domains per job, jobs at the minimum, rail alignment, rack power over cap,
# makespan, and sdiag's main and backfill cycle times.
# Fails if rackwise ever puts a rack over its cap or leaves a multi-node job off its rails when its rack could
# align it; locality against the baseline is reported (it fails only with RW_STRICT_LOCALITY=1: the stream runs
# in real time, so its outcome follows the machine's timing); timing is reported (a ratio above RW_MAX_CYCLE_RATIO, default 1.2, fails only with
# RW_STRICT_TIMING=1: two shared cores are noisy).
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins compare.sh [report.md]
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
report=${1:-}
results=$(mktemp -d /tmp/rackwise-compare.XXXXXX)
trap 'rw_cleanup; rm -rf "$results"' EXIT

# partition  gpus-spec  seconds. gpus-spec: N (--gpus=N) or NxK (-N N --gpus-per-node=K).
stream=(
  "nvl 64 40" "h02 16 30" "nvl 32 30" "hgx 16 25" "h02 8 30" "nvl 16 25" "hgx 2x4 30" "h02 8 25"
  "nvl 8 20" "hgx 12 25" "nvl 48 30" "hgx 8 20" "nvl 4 15" "hgx 2x4 25" "nvl 72 30" "hgx 24 25"
  "nvl 36 25" "hgx 4 15" "h02 12 20" "nvl 16 20" "hgx 8 20" "hgx 3x4 20" "nvl 24 25" "hgx 2x2 15"
  "nvl 8 15" "hgx 4 15" "h02 4 15" "nvl 12 15" "hgx 2x4 15" "nvl 40 20"
)

# Power model (cluster.yaml): per-GPU and idle watts per type; caps per rack.
declare -A CAP_W=([h01]=41000 [h02]=30000 [nvl01]=132000 [nvl02]=132000)
declare -A IDLE_W=([h01]=10000 [h02]=10000 [nvl01]=27000 [nvl02]=27000)
per_gpu_w() { case $1 in h0*) echo 962.5 ;; *) echo 1275 ;; esac; }
domain_size() { case $1 in nvl*) echo 72 ;; *) echo 8 ;; esac; }

# run_stream NAME SELECT [TOPOLOGY_CONF]
run_stream() {
  local name=$1 select=$2 topo=${3:-} out=$results/$1
  mkdir -p "$out"
  rw_setup "$select" "$here/cluster.yaml" "$topo"
  trap 'rw_cleanup; rm -rf "$results"' EXIT   # rw_setup installs its own trap; keep ours
  rw_start || { rw_fail "$name: cluster did not start"; rw_cleanup; return 1; }
  sdiag -r >/dev/null
  local t0 spec part gpus secs args id
  t0=$(date +%s)
  for spec in "${stream[@]}"; do
    read -r part gpus secs <<<"$spec"
    if [[ $gpus == *x* ]]; then args=(-N "${gpus%x*}" --gpus-per-node="${gpus#*x}"); else args=(--gpus="$gpus"); fi
    # topology/block keeps a job in one block only when asked: --segment=<nodes> (all its nodes in one block).
    if [[ $name == *block* && $part == nvl && $gpus != *x* && $gpus -le 72 ]]; then  # <= 18 trays: one block
      args+=(-N $(((gpus + 3) / 4)) --segment=$(((gpus + 3) / 4)))
    fi
    # --segment is a promise to wait for one block; the same promise to rackwise is --nvlink=required. With the
    # default (preferred, preferred_wait_s 0) rackwise spreads a job when no domain is free at that moment, so
    # the two runs' locality counts would compare their real-time timing, not the schedulers (a 24.11 run once
    # spread "nvl 40" that way).
    if [[ $base == cons_tres_block && $name == rackwise && $part == nvl && $gpus != *x* && $gpus -le 72 ]]; then
      args+=(--nvlink=required)
    fi
    id=$(sbatch --parsable -o /dev/null -e /dev/null -D "$RW_TMP" -p "$part" "${args[@]}" -t 5 \
      --wrap "sleep $secs" 2>>"$out/sbatch.err" | cut -d';' -f1)
    [[ -n $id ]] && echo "$id $part $gpus" >>"$out/jobs"
  done
  # Sample until the queue drains (bounded).
  declare -A seen=()
  : >"$out/placements"
  : >"$out/power"
  : >"$out/holders"
  local deadline=$((t0 + 420)) running holding prev_holding="" j
  while (($(date +%s) < deadline)); do
    running=$(squeue -h -t R -o %i)
    holding=$(squeue -h -t R,CG -o %i)
    for j in $running; do
      if [[ -z ${seen[$j]:-} ]]; then
        seen[$j]=1
        rw_job_gpus "$j" | sed "s/^/$j /" >>"$out/placements"
        # Every job that may have held GPUs when j was placed (running or completing now or one sample ago).
        echo "$j" $prev_holding $holding >>"$out/holders"
      fi
    done
    prev_holding=$holding
    # Draw per rack now: idle + GPUs of running jobs.
    local -A gpus_in=([h01]=0 [h02]=0 [nvl01]=0 [nvl02]=0)
    if [[ -n $running ]]; then
      while read -r jid node idx; do
        grep -qx "$jid" <<<"$running" || continue
        local r
        r=$(rw_rack_of "$node")
        gpus_in[$r]=$((gpus_in[$r] + $(tr ',' '\n' <<<"$idx" | grep -c .)))
      done <"$out/placements"
    fi
    local r line=""
    for r in h01 h02 nvl01 nvl02; do
      line+=" $r $(awk -v i="${IDLE_W[$r]}" -v g="${gpus_in[$r]}" -v p="$(per_gpu_w "$r")" 'BEGIN{printf "%.1f", i+g*p}')"
    done
    echo "$(date +%s)$line" >>"$out/power"
    [[ -z $(squeue -h) ]] && break
    sleep 1
  done
  echo $(($(date +%s) - t0)) >"$out/makespan"
  sdiag >"$out/sdiag"
  [[ -n $(squeue -h) ]] && rw_fail "$name: stream did not finish in time"
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
  local jobs=0 domains_sum=0 at_min=0 multi=0 aligned=0 avoidable=0 placed=0
  while read -r id part gpus; do
    jobs=$((jobs + 1))
    local nodes
    nodes=$(awk -v j="$id" '$1==j{print $2}' "$out/placements")
    [[ -z $nodes ]] && continue
    placed=$((placed + 1))
    local total=$gpus
    [[ $gpus == *x* ]] && total=$((${gpus%x*} * ${gpus#*x}))
    local d min size
    d=$(for n in $nodes; do rw_domain_of "$n"; done | sort -u | wc -l)
    size=$(domain_size "$(head -1 <<<"$nodes")")
    min=$(((total + size - 1) / size))
    # -N N asks for N nodes: on HGX that is N domains whatever the scheduler does.
    [[ $gpus == *x* && $size -eq 8 && ${gpus%x*} -gt $min ]] && min=${gpus%x*}
    domains_sum=$((domains_sum + d))
    if ((d <= min)); then at_min=$((at_min + 1)); else echo "$name: job $id ($part $gpus) in $d domains, minimum $min" >&2; fi
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
  local over peak_over
  # kW·s over cap summed over racks, and the worst instant.
  read -r over peak_over < <(awk -v c1="${CAP_W[h01]}" -v c2="${CAP_W[h02]}" -v c3="${CAP_W[nvl01]}" -v c4="${CAP_W[nvl02]}" '
    { cap["h01"]=c1; cap["h02"]=c2; cap["nvl01"]=c3; cap["nvl02"]=c4
      for (i = 2; i < NF; i += 2) { o = $(i+1) - cap[$i]; if (o > 0) { s += o/1000; if (o > m) m = o } } }
    END { printf "%.1f %.1f\n", s, m/1000 }' "$out/power")
  local main_mean bf_mean
  main_mean=$(awk '/Main schedule statistics/{f=1} f&&/Mean cycle:/{print $3; exit}' "$out/sdiag")
  bf_mean=$(awk '/Backfilling stats/{f=1} f&&/Mean cycle:/{print $3; exit}' "$out/sdiag")
  # Per job considered: the mean cycle over the mean number of jobs a cycle looked at (main) or tested with
  # job_test (backfill). The queues differ (rackwise holds jobs back for power), so this is the fairer cost.
  local main_depth bf_depth main_per bf_per
  main_depth=$(awk '/Main schedule statistics/{f=1} f&&/Mean depth cycle:/{print $4; exit}' "$out/sdiag")
  bf_depth=$(awk '/Backfilling stats/{f=1} f&&/Depth Mean \(try depth\):/{print $5; exit}' "$out/sdiag")
  main_per=$(awk -v c="${main_mean:-0}" -v d="${main_depth:-0}" 'BEGIN{printf "%.0f", (d > 0 ? c / d : 0)}')
  bf_per=$(awk -v c="${bf_mean:-0}" -v d="${bf_depth:-0}" 'BEGIN{printf "%.0f", (d > 0 ? c / d : 0)}')
  local main_cycles bf_cycles
  main_cycles=$(awk '/Main schedule statistics/{f=1} f&&/Total cycles:/{print $3; exit}' "$out/sdiag")
  bf_cycles=$(awk '/Backfilling stats/{f=1} f&&/Total cycles:/{print $3; exit}' "$out/sdiag")
  printf '| %s | %d/%d | %s | %d/%d | %d/%d | %s | %s | %s | %s (%s) | %s (%s) | %s / %s |\n' "$name" "$placed" \
    "$jobs" "$(awk -v s="$domains_sum" -v n="$placed" 'BEGIN{printf "%.2f", n ? s/n : 0}')" "$at_min" "$placed" \
    "$aligned" "$multi" "$over" "$peak_over" "$(cat "$out/makespan")" "${main_mean:-?}" "${main_cycles:-?}" \
    "${bf_mean:-?}" "${bf_cycles:-?}" "$main_per" "$bf_per"
  eval "${name//[^a-z]/_}_over=$over ${name//[^a-z]/_}_main=${main_mean:-0} ${name//[^a-z]/_}_bf=${bf_mean:-0}"
  eval "${name//[^a-z]/_}_mainper=$main_per ${name//[^a-z]/_}_bfper=$bf_per"
  eval "${name//[^a-z]/_}_atmin=$at_min ${name//[^a-z]/_}_placed=$placed ${name//[^a-z]/_}_aligned=$aligned ${name//[^a-z]/_}_multi=$multi"
  eval "${name//[^a-z]/_}_avoidable=$avoidable"
}

topo=$results/topology.conf
{
  for n in gpu0{1..8}; do echo "SwitchName=leaf-$n Nodes=$n"; done
  echo "SwitchName=leaf-nvl01 Nodes=nvl01-t[01-18]"
  echo "SwitchName=leaf-nvl02 Nodes=nvl02-t[01-18]"
  echo "SwitchName=su1 Switches=leaf-gpu0[1-8]"
  echo "SwitchName=su2 Switches=leaf-nvl0[1-2]"
  echo "SwitchName=spine Switches=su[1-2]"
} >"$topo"

base=cons_tres_tree
if [[ -n ${RW_SLURM_PREFIX:-} ]]; then
  # Slurm 24.11's anchor: topology/block with one block per NVL72 rack (BlockSizes=18,36: the NVLink domain and
  # both racks). Blocks all have the base size, so single-node HGX domains cannot be blocks beside 18-tray
  # racks (checked: BlockSizes=1 refuses --segment above 1 and multi-node --gpus jobs at submit); the stream is
  # therefore the NVL72 part of the same stream, for both schedulers.
  base=cons_tres_block
  export RW_TOPOLOGY_PLUGIN=topology/block
  {
    echo "BlockName=b-nvl01 Nodes=nvl01-t[01-18]"
    echo "BlockName=b-nvl02 Nodes=nvl02-t[01-18]"
    echo "BlockSizes=18,36"
  } >"$topo"
  nvl_only=()
  for spec in "${stream[@]}"; do [[ $spec == nvl* ]] && nvl_only+=("$spec"); done
  stream=("${nvl_only[@]}")
fi
rw_log "stream of ${#stream[@]} jobs through cons_tres + ${RW_TOPOLOGY_PLUGIN:-topology/tree}"
run_stream "$base" select/cons_tres "$topo"
rw_log "the same stream through rackwise"
run_stream rackwise select/rackwise_cons_tres

table=$(
  echo "| scheduler | jobs placed | NVLink domains per job | jobs at min domains | rail-aligned (multi-node partial) | rack power over cap, kW*s | worst over cap, kW | makespan, s | sdiag main mean cycle, us (cycles) | sdiag backfill mean cycle, us (cycles) | us per job considered, main / backfill |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  summarize "$base"
  summarize rackwise
)
echo "$table"
[[ -n $report ]] && echo "$table" >"$report"

# Checks. Recompute the globals (summarize ran in a subshell above).
summarize "$base" >/dev/null 2>&1
summarize rackwise >/dev/null 2>&1
# The checks below name the baseline cons_tres_tree; on 24.11 it is the block run.
if [[ $base != cons_tres_tree ]]; then
  for v in over main bf mainper bfper atmin placed aligned multi avoidable; do eval "cons_tres_tree_$v=\${${base}_$v}"; done
fi
awk -v o="$rackwise_over" 'BEGIN{exit !(o == 0)}' && rw_ok "rackwise kept every rack within its cap" ||
  rw_fail "rackwise put a rack over its cap ($rackwise_over kW*s)"
# Locality: the stream is submitted in real time, so which domains are free when each job is tried depends on the
# machine's timing as much as on the scheduler (a new, busy machine flipped this comparison). Reported always;
# a failure only with RW_STRICT_LOCALITY=1, until the stream is submitted so that both runs see the same sequence
# of decisions.
if ((rackwise_atmin * cons_tres_tree_placed >= cons_tres_tree_atmin * rackwise_placed)); then
  rw_ok "rackwise at least as local as cons_tres+tree ($rackwise_atmin/$rackwise_placed vs $cons_tres_tree_atmin/$cons_tres_tree_placed)"
elif [[ -n ${RW_STRICT_LOCALITY:-} ]]; then
  rw_fail "rackwise less local than the baseline ($rackwise_atmin/$rackwise_placed vs $cons_tres_tree_atmin/$cons_tres_tree_placed)"
else
  rw_log "note: rackwise less local than the baseline in this run ($rackwise_atmin/$rackwise_placed vs" \
    "$cons_tres_tree_atmin/$cons_tres_tree_placed): timing-dependent, reported only (RW_STRICT_LOCALITY=1 fails)"
fi
# Rail alignment: the stream runs in real time, so the free GPU indices a job meets vary from run to run and
# sometimes no set of nodes shares the rails it needs; comparing the two runs' counts would compare luck. The
# check is the rule itself: rackwise never leaves a job off its rails when its rack had an aligned choice at
# that moment (could_align, conservative). The counts of both runs are reported.
((rackwise_avoidable == 0)) &&
  rw_ok "rackwise aligned every multi-node partial job whose rack could align it (aligned $rackwise_aligned/$rackwise_multi; cons_tres+tree $cons_tres_tree_aligned/$cons_tres_tree_multi, $cons_tres_tree_avoidable avoidable misses)" ||
  rw_fail "rackwise left $rackwise_avoidable multi-node job(s) off their rails although an aligned choice existed"
ratio=$(awk -v a="$rackwise_mainper" -v b="$cons_tres_tree_mainper" 'BEGIN{printf "%.2f", b ? a/b : 0}')
bf_ratio=$(awk -v a="$rackwise_bfper" -v b="$cons_tres_tree_bfper" 'BEGIN{printf "%.2f", b ? a/b : 0}')
rw_log "cost per job considered, rackwise/cons_tres: main $ratio, backfill $bf_ratio (limit ${RW_MAX_CYCLE_RATIO:-1.2});" \
  "mean cycles: main $rackwise_main/$cons_tres_tree_main us, backfill $rackwise_bf/$cons_tres_tree_bf us"
if [[ -n ${RW_STRICT_TIMING:-} ]] &&
  ! awk -v r="$ratio" -v b="$bf_ratio" -v l="${RW_MAX_CYCLE_RATIO:-1.2}" 'BEGIN{exit !(r <= l && b <= l)}'; then
  rw_fail "scheduling cost over the limit"
fi
rw_log "$RW_FAILS failure(s)"
exit $((RW_FAILS > 0))
