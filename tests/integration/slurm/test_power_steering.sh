#!/usr/bin/env bash
# Power steering delivered to the GPUs on the Slurm face, with real daemons: slurmctld (select/rackwise_cons_tres
# with telemetry from Debian's real Prometheus, on_overdraw: lower_limits), 4 slurmd with the fake NVML
# (tests/fake_nvml) and on every node `rackwise-slurm-gpu-power follow`, the node service that applies the steered
# limits file the plugin writes in StateSaveLocation. The DCGM page Prometheus scrapes is kept by this script as
# real GPUs would draw: each GPU draws its demand, but never above its limit in the fake NVML.
# Rack h01 (4 nodes, 10 kW idle, cap 24 kW) runs two 8-GPU jobs declaring 600 W per GPU (19.6 kW counted).
#  - The cap lowered by 30% (16.8 kW, rackwise.yaml + scontrol reconfigure) brings every GPU of both jobs below
#    600 W within two telemetry intervals, the rack's counted draw under the new cap, no job requeued; the cap
#    back at 24 kW brings every GPU back to 600 W within two intervals.
#  - A measured overdraw (a load rackwise did not place draws 6.4 kW on the rack's other nodes: 26 kW measured)
#    does the same, and its end gives the limits back.
#  - Each change is in the node services' logs and metrics files; no node is drained.
#  - policy.oversubscribe_pct 20: both jobs, placed with telemetry fresh, count 480 W per GPU in the ledger while
#    their GPUs run at the 600 W they declared; steering's file names 600 W as what they go back to; a slurmctld
#    restart reads the counted watts back from the published ledger.
# Every wait is on a state, bounded; the two-interval bounds are timed from the moment the change is in force.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins RW_FAKE_NVML=<build>/tests/fake_nvml/lib/libnvidia-ml.so.1 \
#        RW_METRICS_PAGE=<build>/.../rackwise_test_metrics_page test_power_steering.sh   (exit 77: skipped)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
[[ -f ${RW_FAKE_NVML:-} ]] || { echo "FAIL: RW_FAKE_NVML (the fake libnvidia-ml.so.1) not set or missing" >&2; exit 1; }
if ! command -v prometheus >/dev/null || [[ ! -x ${RW_METRICS_PAGE:-} ]]; then
  [[ -n ${CI:-} ]] && { echo "FAIL: needs prometheus and RW_METRICS_PAGE" >&2; exit 1; }
  echo "SKIP: needs prometheus (scripts/install-deps.sh) and RW_METRICS_PAGE" >&2
  exit 77
fi
follow_bin=$RW_PLUGIN_DIR/rackwise-slurm-gpu-power
[[ -x $follow_bin ]] || { echo "FAIL: $follow_bin missing" >&2; exit 1; }

interval=3  # telemetry.interval_s
nodes=(gpu01 gpu02 gpu03 gpu04)
ports=$(rw_pick_ports 2) || exit 1
page_port=$ports prom_port=$((ports + 1))
work=$(mktemp -d /tmp/rackwise-steering.XXXXXX)
RW_PAGE_PID="" RW_PROM_PID="" mirror_pid="" follow_pids=()
stop_helpers() {
  local p
  for p in $mirror_pid $RW_PAGE_PID $RW_PROM_PID "${follow_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in $mirror_pid $RW_PAGE_PID $RW_PROM_PID "${follow_pids[@]}"; do wait "$p" 2>/dev/null; done
  ((RW_FAILS)) && for n in "${nodes[@]}"; do rw_log "--- follow log of $n:"; tail -15 "$work/follow-$n.log" >&2; done
  rm -rf "$work"
}
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT

# Prometheus carries every reading: a test without it would only time out (rw_wait_for calls this).
rw_check_test_daemons() {
  [[ -z $RW_PROM_PID ]] || kill -0 "$RW_PROM_PID" 2>/dev/null || { cat "$work/prometheus.log" >&2; rw_die "prometheus died"; }
}

# The GPUs' demand per node (watts per GPU); the mirror below turns it into the page, capped by each limit.
set_demand() { printf '%s %s\n' "$@" >"$work/demand.tmp" && mv "$work/demand.tmp" "$work/demand"; }
set_demand gpu01 60 gpu02 60 gpu03 60 gpu04 60  # idle until the jobs run
mkdir -p "$work/nvml"
for n in "${nodes[@]}"; do
  mkdir -p "$work/nvml/$n"
  cp "$RW_FAKE_NVML" "$work/nvml/$n/libnvidia-ml.so.1"
  for g in 0 1 2 3 4 5 6 7; do echo "gpu GPU-$n-$g 200000 700000 700000 700000 80000"; done >"$work/nvml/$n/fake_nvml.state"
done
# The DCGM exporter's page, as the GPUs would draw: min(demand, limit) per GPU. Rewritten twice a second (a
# model of the hardware, not a wait).
mirror() {
  while :; do
    {
      echo "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"
      for n in "${nodes[@]}"; do
        awk -v node="$n" -v demand="$(awk -v n="$n" '$1 == n {print $2}' "$work/demand")" \
          '$1 == "gpu" {w = $6 / 1000; if (demand < w) w = demand; printf "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",Hostname=\"%s\"} %s\n", g++, node, w}' \
          "$work/nvml/$n/fake_nvml.state"
      done
    } >"$work/dcgm.prom.tmp" && mv "$work/dcgm.prom.tmp" "$work/dcgm.prom"
    sleep 0.5
  done
}
mirror &
mirror_pid=$!
until [[ -s $work/dcgm.prom ]]; do sleep 0.1; done
rw_start_prometheus "$work" "$page_port" "$prom_port" || exit 1
rw_ok "prometheus scrapes the page the fake GPUs draw"

yaml=$work/cluster.yaml
cp "$here/steering_cluster.yaml" "$yaml"
rw_enforce_limits "$yaml" "$work/nvml"
rw_add_telemetry "$yaml" "$interval" 15 lower_limits
RW_EXTRA_CONF=$'PrologFlags=Alloc' RW_SPANK=required rw_setup select/rackwise_cons_tres "$yaml"
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT
echo "required ${RW_PLUGIN_DIR}/spank_rackwise.so cache_dir=$RW_TMP/cache/%n" >"$RW_TMP/etc/plugstack.conf"
rw_start || exit 1
limits_file=$RW_TMP/state/rackwise_gpu_limits
for n in "${nodes[@]}"; do
  "$follow_bin" follow --limits="$limits_file" --node="$n" --interval=1 --metrics="$work/nvml/%n/steering.prom" \
    --scontrol="$(command -v scontrol)" --cache-dir="$RW_TMP/cache/%n" >"$work/follow-$n.log" 2>&1 &
  follow_pids+=($!)
done

# "l1 l2 ..." (watts) of a node's fake GPUs.
limits_w() { awk '$1 == "gpu" {printf "%s%g", (n++ ? " " : ""), $6 / 1000} END {print ""}' "$work/nvml/$1/fake_nvml.state"; }
job_limits() { limits_w gpu01; limits_w gpu02; }  # the jobs' 16 GPUs
all_at() { [[ $(job_limits | tr ' ' '\n' | sort -u | paste -sd' ') == "$1" ]]; }
all_below() { job_limits | tr ' ' '\n' | awk -v w="$1" '$1 >= w {bad = 1} END {exit bad || NR != 16}'; }
# The rack counted at the jobs' limits (idle 10 kW + their GPUs), in watts.
rack_counted() { job_limits | tr ' ' '\n' | awk '{s += $1} END {printf "%d", 10000 + s}'; }
restarts() { scontrol show job "$1" 2>/dev/null | grep -o 'Restarts=[0-9]*' | cut -d= -f2; }
jobs_untouched() {
  local j
  for j in "$j1" "$j2"; do [[ $(rw_state "$j") == RUNNING && $(restarts "$j") == 0 ]] || return 1; done
}
# timed_wait WHAT BOUND COMMAND...: waits (up to 60 s) and fails when it took longer than BOUND seconds.
timed_wait() {
  local what=$1 bound=$2 start=$EPOCHREALTIME took
  shift 2
  if ! rw_wait_for 60 "$@"; then
    rw_fail "$what: not reached in 60 s; GPU limits: $(job_limits | paste -sd'|')"
    return 1
  fi
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
  if awk -v t="$took" -v b="$bound" 'BEGIN {exit !(t <= b)}'; then
    rw_ok "$what in $took s (bound $bound s): $(job_limits | paste -sd'|')"
  else
    rw_fail "$what took $took s, more than $bound s"
  fi
}
set_cap() {
  sed -i "s/power_cap_kw: [0-9.]*/power_cap_kw: $1/" "$RW_TMP/etc/rackwise.yaml"
  scontrol reconfigure || rw_fail "scontrol reconfigure failed"
}

state_file=$RW_TMP/state/rackwise_state.yaml
# Oversubscription applies only with every rack's telemetry fresh: the jobs are placed once it is.
rw_wait_log 'rackwise: telemetry: fresh' 30 || rw_fail "telemetry never fresh in slurmctld.log"
# Both jobs listed in the published ledger as counted 480 W per GPU (600 W declared).
counted_480() { (($(grep -c 'counted_watts_per_gpu: 480$' "$state_file" 2>/dev/null) == 2)); }
j1=$(rw_submit -w gpu01 --gpus=8 --gpu-watts=600)
j2=$(rw_submit -w gpu02 --gpus=8 --gpu-watts=600)
rw_wait_state "$j1" RUNNING 30 && rw_wait_state "$j2" RUNNING 30 ||
  rw_fail "jobs: $j1 $(rw_state "$j1") $(rw_reason "$j1"), $j2 $(rw_state "$j2") $(rw_reason "$j2")"
rw_wait_for 30 all_at 600 && rw_ok "jobs $j1, $j2 run with their 16 GPUs at 600 W (prolog)" ||
  rw_fail "prolog limits: $(job_limits | paste -sd'|')"
rw_wait_for 30 counted_480 && rw_ok "both jobs counted oversubscribed, 480 W per GPU (declared 600 W)" ||
  rw_fail "published ledger: $(grep -A3 '^oversubscribed:' "$state_file" | paste -sd' ')"
set_demand gpu01 600 gpu02 600 gpu03 60 gpu04 60  # the jobs draw all their limit allows
busy() { [[ $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE)') == 10560 ]]; }
rw_wait_for 30 busy || rw_fail "prometheus does not show the jobs drawing 9.6 kW"
rw_wait_for 30 test -f "$limits_file" && rw_ok "the plugin publishes $limits_file" || rw_fail "no $limits_file"

# --- the cap lowered by 30% ---------------------------------------------------------------------------------
set_cap 16.8
timed_wait "cap 24 -> 16.8 kW: every GPU of both jobs below 600 W" $((2 * interval)) all_below 600
# Progressive filling cuts every job's headroom alike; once settled, the rack fits its new cap.
fits() { (($(rack_counted) <= 16800)); }
rw_wait_for 30 fits && rw_ok "rack counted at the steered limits: $(rack_counted) W <= 16800 W" ||
  rw_fail "rack counted at the steered limits: $(rack_counted) W > 16800 W"
[[ $(job_limits | tr ' ' '\n' | sort -u | wc -l) -eq 1 ]] && rw_ok "one fair limit for both jobs" ||
  rw_fail "unequal limits: $(job_limits | paste -sd'|')"
jobs_untouched && rw_ok "no job requeued (floors allow the cap)" || rw_fail "a job was requeued or stopped"
# Straight to the fair limit: the jobs the reload recommitted are not taken for new draw on top of the reading
# (which would cut them to their floors for a round, then raise them again).
[[ $(grep -c "job $j1 (generation" "$work/follow-gpu01.log") -eq 1 ]] && rw_ok "one change on gpu01, no detour" ||
  rw_fail "gpu01's limits moved more than once: $(grep "job $j1 (generation" "$work/follow-gpu01.log")"
grep -q "rackwise: steer: $j1: 600 W per GPU -> " "$RW_TMP/log/slurmctld.log" && rw_ok "slurmctld logged the steer" ||
  rw_fail "no steer line for $j1 in slurmctld.log"
declared=$(awk -v j="$j1" '$1 == j {print $3}' "$limits_file")
[[ $declared == 600.000 ]] && rw_ok "the limits file gives $j1's declared watts (600), not the 480 counted" ||
  rw_fail "declared_watts_per_gpu of $j1 in $limits_file: '$declared'"
grep -q "job $j1 (generation [0-9]*): GPUs 0,1,2,3,4,5,6,7 to " "$work/follow-gpu01.log" &&
  rw_ok "gpu01's service logged: $(grep "job $j1 (generation" "$work/follow-gpu01.log" | tail -1)" ||
  rw_fail "no change logged by gpu01's service"
grep -q "rackwise_slurm_gpu_steered_limit_watts{node=\"gpu02\",job=\"$j2\",gpu=\"7\"} " "$work/nvml/gpu02/steering.prom" &&
  rw_ok "gpu02's metrics file exports the steered limits" || rw_fail "no steered limit in gpu02's metrics file"

# --- the cap back ---------------------------------------------------------------------------------------------
set_cap 24
timed_wait "cap back at 24 kW: every GPU back at 600 W" $((2 * interval)) all_at 600
jobs_untouched || rw_fail "a job was requeued or stopped"

# --- a measured overdraw: 6.4 kW rackwise did not place, on gpu03 and gpu04 ------------------------------------
set_demand gpu01 600 gpu02 600 gpu03 400 gpu04 400
hot() { [[ $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE{Hostname=~"gpu0[34]"})') == 6400 ]]; }
rw_wait_for 30 hot || rw_fail "prometheus does not show 6.4 kW on gpu03 and gpu04"
timed_wait "rack measured at 26 kW (cap 24): every GPU of both jobs below 600 W" $((2 * interval)) all_below 600
measured_fits() {
  local m
  m=$(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE)')
  awk -v m="$m" 'BEGIN {exit !(m != "" && 10000 + m <= 24000.5)}'
}
rw_wait_for 30 measured_fits && rw_ok "rack measured back under its cap: $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE)') W + 10 kW idle" ||
  rw_fail "rack measures $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE)') W + 10 kW idle, over 24 kW"
jobs_untouched && rw_ok "no job requeued in the overdraw" || rw_fail "a job was requeued or stopped in the overdraw"
grep -q "rackwise: OVERDRAW: rack h01 measures" "$RW_TMP/log/slurmctld.log" && rw_ok "slurmctld raised the alarm" ||
  rw_fail "no OVERDRAW line in slurmctld.log"
set_demand gpu01 600 gpu02 600 gpu03 60 gpu04 60
cool() { [[ $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE{Hostname=~"gpu0[34]"})') == 960 ]]; }
rw_wait_for 30 cool || rw_fail "prometheus does not show gpu03 and gpu04 idle again"
timed_wait "overdraw over: every GPU back at 600 W" $((2 * interval)) all_at 600

# --- a slurmctld restart: the jobs still count what they were counted at -------------------------------------------
fresh_readings=$(grep -c 'rackwise: telemetry: fresh' "$RW_TMP/log/slurmctld.log")
rw_stop_ctld
echo '# published before the restart' >>"$state_file"  # gone once the restarted slurmctld publishes its own
rw_start_ctld || rw_fail "slurmctld did not restart"
rw_wait_log 'rackwise: 2 jobs counted oversubscribed, read back from' 30 &&
  rw_ok "slurmctld read the jobs counted oversubscribed back" || rw_fail "no read-back line in slurmctld.log"
republished() { ! grep -q '^# published before the restart' "$state_file" && counted_480; }
rw_wait_for 30 republished && rw_ok "after the restart both jobs still count 480 W per GPU" ||
  rw_fail "published ledger after the restart: $(grep -A3 '^oversubscribed:' "$state_file" | paste -sd' ')"
jobs_untouched || rw_fail "a job was requeued or stopped by the restart"
# slurmctld hands the plugin every job it recovered, perhaps after the first reading (which has their draw in it):
# a job that ran before the restart is recorded as it runs, never judged a start around the core and requeued.
rw_wait_log 'rackwise: telemetry: fresh' 30 $((fresh_readings + 1)) || rw_fail "no reading after the restart"
grep -q 'started outside its placement' "$RW_TMP/log/slurmctld.log" &&
  rw_fail "a job recovered by the restart was taken for a start outside its placement" ||
  rw_ok "the recovered jobs were recorded as they run, none taken for a new start"

drained=$(sinfo -h -t drain -o %N | paste -sd,)
[[ -z $drained ]] && rw_ok "no node drained" || rw_fail "drained: $drained"
scancel "$j1" "$j2"
gone() { [[ -z $(rw_state "$j1") && -z $(rw_state "$j2") ]]; }
rw_wait_for 120 gone && rw_wait_for 120 all_at 700 && rw_ok "jobs ended: the epilog gave every GPU back (700 W)" ||
  rw_fail "after the jobs: $(job_limits | paste -sd'|')"
exit $((RW_FAILS != 0))
