#!/usr/bin/env bash
# One power budget for Slurm and another owner: a real slurmctld and two slurmd, a real etcd and a real
# rackwise-ledger, all on loopback. shared_ledger_cluster.yaml's rack holds 8 GPUs of budget; Slurm's guaranteed
# slice is 4, Kubernetes's 2. Every Slurm job here takes 2 GPUs of gpu01.
#  1. Kubernetes holds 4 GPUs (reserved through the ledger): two Slurm jobs run, the third pends with a reason
#     naming the shared ledger; the ledger's slurm/rwtest/ owners are exactly the running jobs.
#  2. Kubernetes releases: the third job runs (6 GPUs: Kubernetes's unused slice of 2 stays free), a fourth pends.
#  3. The ledger is killed: the plugin falls back (metrics file, one log line, pending reason) and keeps within its
#     slice of 4: with two jobs ended, the fourth runs (4 GPUs) and a fifth pends.
#  4. The ledger is back: the reconcile leaves exactly the running jobs (the releases made meanwhile are gone, the
#     start made meanwhile is there), and the fifth job runs.
#  5. slurmctld restarts over a ledger that holds a leaked slurm/rwtest/ owner: the reconcile drops it, and a
#     job submitted then runs within what is left.
# Every caller has its identity (a token; the ledger's access file): slurmctld writes slurm/rwtest/, the test's
# "Kubernetes" k8s/, an operator slurm/rwtest/ (the leaked owner of 5). A caller without a token, and Kubernetes,
# cannot release a running job's reservation.
# Every wait is on a state, bounded. Usage: RW_PLUGIN_DIR=... RACKWISE_LEDGER=<build>/ledger_service/rackwise-ledger
# RACKWISE_LEDGER_CLIENT=<build>/ledger_service/rackwise-ledger-test-client test_shared_ledger.sh (77: skipped).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
if [[ ! -x /usr/bin/etcd || ! -x ${RACKWISE_LEDGER:-} || ! -x ${RACKWISE_LEDGER_CLIENT:-} ]]; then
  [[ -n ${CI:-} ]] && { echo "FAIL: needs /usr/bin/etcd, RACKWISE_LEDGER and RACKWISE_LEDGER_CLIENT" >&2; exit 1; }
  echo "SKIP: needs /usr/bin/etcd (etcd-server), RACKWISE_LEDGER and RACKWISE_LEDGER_CLIENT" >&2
  exit 77
fi

rw_setup select/rackwise_cons_tres "$here/shared_ledger_cluster.yaml" || exit 1
ports=$(rw_pick_ports 3) || exit 1
etcd_url=http://127.0.0.1:$ports ledger_addr=127.0.0.1:$((ports + 2))
sed -i "s/LEDGER_URL/$ledger_addr/" "$RW_TMP/etc/rackwise.yaml"
rw_ledger_identities slurmctld-rwtest=slurm/rwtest/ kubernetes=k8s/ operator=slurm/rwtest/ || exit 1
rw_ledger_token "$RW_TMP/etc/rackwise.yaml" slurmctld-rwtest
RW_ETCD_PID="" ledger_pid=""
stop_helpers() {
  local p
  for p in $ledger_pid $RW_ETCD_PID; do kill -TERM "$p" 2>/dev/null; done
  for p in $ledger_pid $RW_ETCD_PID; do wait "$p" 2>/dev/null; done
}
# rw_teardown exits with the status it finds in $?: the script's, not stop_helpers'.
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT

client() { "$RACKWISE_LEDGER_CLIENT" --token-file "$RW_TMP/etc/kubernetes.token" "$ledger_addr" "$@"; }
operator() { "$RACKWISE_LEDGER_CLIENT" --token-file "$RW_TMP/etc/operator.token" "$ledger_addr" "$@"; }
anonymous() { "$RACKWISE_LEDGER_CLIENT" "$ledger_addr" "$@"; }

start_ledger() {
  "$RACKWISE_LEDGER" --cluster "$RW_TMP/etc/rackwise.yaml" --etcd "$etcd_url" --listen "$ledger_addr" \
    --name rwtest --replica-id a --lease-ttl-s 2 --access-file "$RW_TMP/etc/ledger-access.yaml" \
    >>"$RW_TMP/log/ledger.log" 2>&1 &
  ledger_pid=$!
  rw_wait_for 30 client list >/dev/null 2>&1 || { rw_fail "rackwise-ledger did not serve"; tail "$RW_TMP/log/ledger.log" >&2; exit 1; }
}

rw_start_etcd "$etcd_url" $((ports + 1)) "$RW_TMP/log/etcd.log" || exit 1
start_ledger
rw_start || exit 1
metrics=$RW_TMP/state/rackwise_ledger.prom
metric() { grep -q "^$1\$" "$metrics" 2>/dev/null; }
rw_wait_for 30 metric "rackwise_ledger_fallback 0" || { rw_fail "the plugin never reached the ledger"; exit 1; }
rw_ok "the plugin reached the shared ledger (metrics: fallback 0)"

# The ledger's slurm/rwtest/ owners as job ids, and the running jobs, each sorted on one line.
slurm_owners() { client list slurm/rwtest/ | awk '{sub("slurm/rwtest/", "", $1); print $1}' | sort -n | xargs; }
running() { squeue -h -t R -o %i | sort -n | xargs; }
owners_are_running() { [[ $(slurm_owners) == "$(running)" ]]; }
# Every owner of the ledger holds 2 GPUs (no job counted twice, none with another's GPUs).
gpus_each_two() { [[ -z $(client list slurm/rwtest/ | awk '$2 != 2') ]]; }
check_ledger_equals_running() {
  if rw_wait_for 20 owners_are_running && gpus_each_two; then
    rw_ok "$1: the ledger's slurm/rwtest/ owners are the running jobs: $(slurm_owners)"
  else
    rw_fail "$1: ledger owners '$(slurm_owners)' (GPUs: $(client list slurm/rwtest/ | xargs)), running '$(running)'"
  fi
}
submit() { rw_submit -N1 -w gpu01 --gres=gpu:2 -p all; }

# 1. Kubernetes holds 4 GPUs of the rack: Slurm runs 4 and no more.
client reserve k8s/default/pod-a gpu02:0,1,2,3 || { rw_fail "the other owner could not reserve"; exit 1; }
j1=$(submit) j2=$(submit) j3=$(submit)
rw_wait_state "$j1" RUNNING 30 && rw_wait_state "$j2" RUNNING 30 || rw_fail "jobs $j1 $j2 not RUNNING"
if rw_wait_reason "$j3" "shared power ledger" 30; then rw_ok "job $j3 pends: $(rw_reason "$j3")"; else
  rw_fail "job $j3: want a pending reason naming the shared power ledger, got $(rw_state "$j3"): $(rw_reason "$j3")"; fi
check_ledger_equals_running "with Kubernetes holding 4 GPUs"
# Nobody but slurmctld (and the operator) writes Slurm's owners: refused (exit 2), the reservation stays.
anonymous release "slurm/rwtest/$j1" 2>"$RW_TMP/log/anonymous.err"
rc=$?
[[ $rc == 2 ]] && grep -q "authorization: Bearer" "$RW_TMP/log/anonymous.err" &&
  rw_ok "a caller without a token cannot release job $j1's reservation" ||
  rw_fail "release without a token: exit $rc, $(cat "$RW_TMP/log/anonymous.err")"
client release "slurm/rwtest/$j1" 2>"$RW_TMP/log/kubernetes.err"
rc=$?
[[ $rc == 2 ]] && grep -q "identity 'kubernetes' may not Release" "$RW_TMP/log/kubernetes.err" &&
  rw_ok "Kubernetes cannot release job $j1's reservation" ||
  rw_fail "release by Kubernetes: exit $rc, $(cat "$RW_TMP/log/kubernetes.err")"
check_ledger_equals_running "after the refused releases"
grep -q "audit: kubernetes Release slurm/rwtest/$j1: denied" "$RW_TMP/log/ledger.log" &&
  rw_ok "the refused release is in the ledger's audit log" || rw_fail "no audit line for the refused release"

# 2. Kubernetes releases: Slurm takes up to 6 (Kubernetes's unused slice of 2 is kept free).
client release k8s/default/pod-a || rw_fail "release of the other owner"
rw_wait_state "$j3" RUNNING 30 && rw_ok "job $j3 runs once Kubernetes released" || rw_fail "job $j3 did not start"
j4=$(submit)
rw_wait_reason "$j4" "shared power ledger" 30 && rw_ok "job $j4 pends: $(rw_reason "$j4")" ||
  rw_fail "job $j4: $(rw_state "$j4") $(rw_reason "$j4")"
check_ledger_equals_running "Kubernetes idle"

# 3. The ledger dies: fallback within Slurm's slice of 4 GPUs.
kill -KILL "$ledger_pid"
wait "$ledger_pid" 2>/dev/null
ledger_pid=""
rw_wait_for 20 metric "rackwise_ledger_fallback 1" && rw_ok "fallback in the metrics file" || rw_fail "no fallback metric"
metric "rackwise_ledger_fallbacks_total 1" || rw_fail "fallbacks_total is not 1: $(cat "$metrics")"
rw_wait_log "rackwise: power ledger unreachable" 10 || rw_fail "slurmctld.log does not say the ledger is unreachable"
rw_wait_reason "$j4" "shared power ledger unreachable" 30 && rw_ok "job $j4 pends: $(rw_reason "$j4")" ||
  rw_fail "job $j4 reason in fallback: $(rw_reason "$j4")"
scancel "$j1" "$j2"
rw_wait_state "$j4" RUNNING 30 && rw_ok "job $j4 runs within the slice once two jobs ended" || rw_fail "job $j4 did not start"
j5=$(submit)
rw_wait_reason "$j5" "shared power ledger unreachable" 30 && rw_ok "job $j5 pends beyond the slice" ||
  rw_fail "job $j5 in fallback: $(rw_state "$j5") $(rw_reason "$j5")"
n=$(grep -c "rackwise: power ledger unreachable" "$RW_TMP/log/slurmctld.log")
[[ $n -eq 1 ]] && rw_ok "the fallback is logged once" || rw_fail "the fallback is logged $n times"

# 4. The ledger is back: reconcile, then shared again.
start_ledger
rw_wait_for 30 metric "rackwise_ledger_fallback 0" && rw_ok "back to the shared ledger" || rw_fail "still in fallback"
rw_wait_log "rackwise: power ledger back" 10 || rw_fail "slurmctld.log does not say the ledger is back"
rw_wait_state "$j5" RUNNING 30 && rw_ok "job $j5 runs once the ledger is back" || rw_fail "job $j5 did not start"
check_ledger_equals_running "after the ledger's return"

# 5. slurmctld restarts while the ledger holds an owner of a job that is gone: the reconcile drops it. (Room for
# it first: the ledger refuses what would pass the budget, a leaked owner included.)
scancel "$j5"
check_ledger_equals_running "job $j5 cancelled"
rw_stop_ctld
operator reserve slurm/rwtest/999999 gpu02:6,7 || rw_fail "could not plant a leaked owner"
rw_start_ctld || exit 1
check_ledger_equals_running "after slurmctld's restart"
j6=$(submit)
rw_wait_state "$j6" RUNNING 30 && rw_ok "job $j6 runs after the restart" || rw_fail "job $j6: $(rw_reason "$j6")"
check_ledger_equals_running "job $j6 started"
rw_check_never
((RW_FAILS == 0))
