#!/usr/bin/env bash
# Measured power in slurmctld: select/rackwise_cons_tres polls Debian's real Prometheus (started here on a free
# loopback port), which scrapes a page in the DCGM exporter's format. Raising rack h02's measured draw to
# 27.5 kW (cap 30 kW) keeps an 8-GPU job (7.7 kW) for h02 pending with a reason naming the measured watts, and
# slurmctld logs the fresh source; stopping the page makes the source stale (logged once) and the job starts on
# estimates. Every wait is on a state (target up, a query's value, a job state or reason), bounded.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins RW_METRICS_PAGE=<build>/.../rackwise_test_metrics_page \
#        RACKWISE_CLI=<build>/tools/rackwise \
#        test_telemetry.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
if ! command -v prometheus >/dev/null || [[ ! -x ${RW_METRICS_PAGE:-} || ! -x ${RACKWISE_CLI:-} ]]; then
  [[ -n ${CI:-} ]] && { echo "FAIL: needs prometheus, RW_METRICS_PAGE and RACKWISE_CLI" >&2; exit 1; }
  echo "SKIP: needs prometheus (scripts/install-deps.sh), RW_METRICS_PAGE and RACKWISE_CLI" >&2
  exit 77
fi

ports=$(rw_pick_ports 2) || exit 1
page_port=$ports prom_port=$((ports + 1))
work=$(mktemp -d /tmp/rackwise-telemetry.XXXXXX)
RW_PAGE_PID="" RW_PROM_PID=""
stop_helpers() {
  local p
  for p in $RW_PAGE_PID $RW_PROM_PID; do kill -TERM "$p" 2>/dev/null; done
  for p in $RW_PAGE_PID $RW_PROM_PID; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}

# node watts-per-GPU ... -> the DCGM exporter page (8 GPUs per node).
write_page() {
  {
    echo "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W)."
    echo "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"
    local node watts g
    while (($#)); do
      node=$1 watts=$2
      shift 2
      for g in 0 1 2 3 4 5 6 7; do
        printf 'DCGM_FI_DEV_POWER_USAGE{gpu="%d",UUID="GPU-%s-%d",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="%s",DCGM_FI_DRIVER_VERSION="535.104.12"} %s\n' \
          "$g" "$node" "$g" "$g" "$node" "$watts"
      done
    done
  } >"$work/dcgm.prom.tmp" && mv "$work/dcgm.prom.tmp" "$work/dcgm.prom"
}


# Prometheus feeds every reading: a test without it would only time out.
rw_check_test_daemons() {
  [[ -z $RW_PROM_PID ]] || kill -0 "$RW_PROM_PID" 2>/dev/null || { cat "$work/prometheus.log" >&2; rw_die "prometheus died"; }
}

idle_page=()
for n in gpu01 gpu02 gpu03 gpu04 gpu05 gpu06 gpu07 gpu08; do idle_page+=("$n" 60); done
write_page "${idle_page[@]}"
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT
rw_start_prometheus "$work" "$page_port" "$prom_port" || exit 1
rw_ok "prometheus scrapes the DCGM page"

yaml=$work/cluster.yaml
cp "$here/telemetry_cluster.yaml" "$yaml"
rw_add_telemetry "$yaml" 1 5 requeue_newest
rw_setup select/rackwise_cons_tres "$yaml"
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT
rw_start || exit 1

# h02 at 27.5 kW: 10 kW idle + 32 GPUs x 546.875 W. An 8-GPU job needs 7.7 kW; 2.5 kW are left.
hot=()
for n in gpu01 gpu02 gpu03 gpu04; do hot+=("$n" 60); done
for n in gpu05 gpu06 gpu07 gpu08; do hot+=("$n" 546.875); done
write_page "${hot[@]}"
h02_gpus_hot() { [[ $(rw_prom_query 'sum(DCGM_FI_DEV_POWER_USAGE{Hostname=~"gpu0[5-8]"})') == 17500 ]]; }
rw_wait_for 30 h02_gpus_hot ||
  rw_fail "prometheus does not show h02 at 17.5 kW of GPUs"
# slurmctld polls once a second: wait until it has queried twice more (so at least one of its polls saw the hot
# rack), counted on Prometheus's own /metrics, which the test's reads of /metrics do not add to.
query_count() {
  curl -s --max-time 2 "http://127.0.0.1:$prom_port/metrics" |
    sed -n 's/^prometheus_http_requests_total{code="200",handler="\/api\/v1\/query"} \([0-9]*\).*/\1/p'
}
seen=$(query_count)
polled_twice() { [[ $(query_count) -ge $((seen + 2)) ]]; }
rw_wait_for 30 polled_twice || rw_fail "slurmctld did not poll prometheus (requests: $(query_count), before: $seen)"
j=$(rw_submit -p h02 --gpus=8)
[[ -n $j ]] || rw_fail "sbatch refused: $(cat "$RW_TMP/sbatch.err")"
reason_names_watts() { [[ $(rw_state "$j") == PENDING ]] && rw_reason "$j" | grep -q 'measures 27.5 kW'; }
if rw_wait_for 40 reason_names_watts; then
  rw_ok "job $j for h02 pending: $(rw_reason "$j")"
else
  rw_fail "job $j: $(rw_state "$j"), reason $(rw_reason "$j")"
fi
grep -q 'rackwise: telemetry: fresh (2 of 2 racks measured)' "$RW_TMP/log/slurmctld.log" &&
  rw_ok "slurmctld logged the fresh source" || rw_fail "no 'telemetry: fresh' line in slurmctld.log"
# The ledger the plugin publishes carries the readings: `rackwise status` on it shows h02's measured draw
# (row: NAME DRAW MEASURED CAP ...), as the plugin counts it.
h02_row() {
  "$RACKWISE_CLI" status --cluster "$RW_TMP/etc/rackwise.yaml" --state "$RW_TMP/state/rackwise_state.yaml" 2>&1 |
    awk '$1 == "h02"'
}
h02_measured() { [[ $(h02_row | awk '{print $3}') == 27.5 ]]; }
rw_wait_for 30 h02_measured && rw_ok "rackwise status on the published state: $(h02_row)" ||
  rw_fail "rackwise status does not show h02 measured at 27.5 kW: $(h02_row)"

# The exporter goes away: its series go stale in Prometheus, the plugin falls back to estimates and says so.
kill -TERM "$RW_PAGE_PID" 2>/dev/null
wait "$RW_PAGE_PID" 2>/dev/null
RW_PAGE_PID=""
if rw_wait_state "$j" RUNNING 60; then
  rw_ok "with the exporter gone, job $j runs on estimates"
else
  rw_fail "job $j still $(rw_state "$j"): $(rw_reason "$j")"
fi
stale=$(grep -c 'rackwise: telemetry: stale' "$RW_TMP/log/slurmctld.log")
[[ $stale -ge 1 ]] && rw_ok "the stale source was logged ($stale line(s): once per transition)" ||
  rw_fail "no 'telemetry: stale' line in slurmctld.log"

# on_overdraw: requeue_newest. The exporter is back with every GPU idle; job k starts on h02 beside job j. Then
# h02 measures 10 kW idle + 32 x 700 W = 32.4 kW, over its 30 kW cap: the plugin raises the alarm and requeues
# the newest job there (k), whose 7.7 kW cover the 2.4 kW excess; j runs on, and nothing more is requeued.
write_page "${idle_page[@]}"
rw_serve_page "$work" "$page_port"
rw_wait_for 60 rw_prom_target_up || rw_fail "prometheus target not up again: $(cat "$work/page.log")"
k=$(rw_submit -p h02 --gpus=8)
rw_wait_state "$k" RUNNING 60 && rw_ok "job $k runs on h02 beside job $j" ||
  rw_fail "job ${k:-?}: $(rw_state "$k") $(rw_reason "$k")"
over=()
for n in gpu01 gpu02 gpu03 gpu04; do over+=("$n" 60); done
for n in gpu05 gpu06 gpu07 gpu08; do over+=("$n" 700); done
write_page "${over[@]}"
restarts() { scontrol show job "$1" 2>/dev/null | grep -o 'Restarts=[0-9]*' | cut -d= -f2; }
requeued() { [[ $(restarts "$k") -ge 1 ]]; }
if rw_wait_for 60 requeued; then
  rw_ok "rack h02 over its cap: the newest job $k was requeued ($(rw_state "$k"))"
else
  rw_fail "job $k not requeued: $(rw_state "$k") restarts=$(restarts "$k")"
  grep 'rackwise' "$RW_TMP/log/slurmctld.log" | tail -20 >&2
fi
grep -q "rackwise: OVERDRAW: rack h02 measures 32.4 kW, above its 30.0 kW cap; jobs on it: " "$RW_TMP/log/slurmctld.log" &&
  rw_ok "the alarm names rack h02 and its jobs" || rw_fail "no OVERDRAW alarm for h02 in slurmctld.log"
grep -q "rackwise: OVERDRAW: requeue_newest: requeued JobId=$k " "$RW_TMP/log/slurmctld.log" &&
  rw_ok "the requeue was logged" || rw_fail "no 'requeue_newest: requeued JobId=$k' line in slurmctld.log"
# Two more polls (and a publishing round) with h02 still over: the same overdraw acts once.
seen=$(query_count)
five_more() { [[ $(query_count) -ge $((seen + 5)) ]]; }
rw_wait_for 30 five_more || rw_fail "slurmctld stopped polling"
[[ $(rw_state "$j") == RUNNING && $(restarts "$j") == 0 ]] && rw_ok "job $j (older) still runs, never requeued" ||
  rw_fail "job $j: $(rw_state "$j") restarts=$(restarts "$j")"
[[ $(grep -c 'requeue_newest: requeued' "$RW_TMP/log/slurmctld.log") -eq 1 ]] && rw_ok "one requeue for one overdraw" ||
  rw_fail "requeues: $(grep 'requeue_newest' "$RW_TMP/log/slurmctld.log")"
exit $((RW_FAILS != 0))
