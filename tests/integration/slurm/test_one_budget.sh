#!/usr/bin/env bash
# One power budget for Slurm and Kubernetes, with faults: a real slurmctld and four
# slurmd, the real rackwise-extender fed kube-scheduler's exact extender payloads (filter -> prioritize -> bind,
# as in tests/integration/k8s/testdata/) over HTTP, a fake kube-apiserver (rackwise_test_fake_apiserver: list,
# watch, binding), a real etcd and two rackwise-ledger replicas, all on loopback. one_budget_cluster.yaml: one
# rack in one row whose budgets hold exactly 8 GPUs; Slurm's jobs run on gpu01/gpu02, pods on gpu03/gpu04; every
# job and pod takes 2 GPUs. Both shares are 0 (full sharing); the fallback within a guaranteed slice is
# test_shared_ledger.sh's.
#  1. The whole budget each: Slurm alone runs 4 jobs (8 GPUs), a fifth pends naming power, and a pod finds no
#     node; then Kubernetes alone binds 4 pods, a fifth finds no node naming power, and a Slurm job pends.
#  2. Both at once: a stream of Slurm jobs and a stream of pods (created, scheduled, deleted 3-5 s after their
#     binding) compete for the budget, each wanting up to 6 GPUs at a time (together more than the budget;
#     neither can starve the other). A sampler checks throughout that the GPUs of the Slurm jobs RUNNING in two
#     squeue samples around a sample of the bound pods, plus those pods' GPUs, never pass 8.
#  3. While both run, in turn: kill -9 the ledger's leader (the other replica takes over; the killed one comes
#     back as a follower), kill -9 slurmctld (its state saved first, see there; a job ends while it is down;
#     restarted), kill -9 rackwise-extender (a bound pod is deleted while it is down; restarted: the pods still
#     bound are adopted and reach the ledger). After each, both sides make progress through the ledger again and
#     the streams turn over; then they stop, and the ledger equals what runs: exactly the RUNNING jobs and the
#     bound pods, each with its GPUs, and no other owner.
# Every wait is on a state, bounded; a daemon that dies unexpectedly fails the test at once with its log.
# Usage: RW_PLUGIN_DIR=... RACKWISE_LEDGER=... RACKWISE_LEDGER_CLIENT=... RACKWISE_EXTENDER=...
# RACKWISE_FAKE_APISERVER=... test_one_budget.sh (77: skipped).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
for b in "${RACKWISE_LEDGER:-}" "${RACKWISE_LEDGER_CLIENT:-}" "${RACKWISE_EXTENDER:-}" "${RACKWISE_FAKE_APISERVER:-}" \
  /usr/bin/etcd /usr/bin/jq /usr/bin/curl; do
  [[ -x $b ]] && continue
  [[ -n ${CI:-} ]] && { echo "FAIL: needs $b (etcd-server, jq, curl and the built test binaries)" >&2; exit 1; }
  echo "SKIP: needs ${b:-a binary named by RACKWISE_*} (etcd-server, jq, curl, the built test binaries)" >&2
  exit 77
done

BUDGET=8 GPUS_EACH=2
SLURM_NODES=(gpu01 gpu02) K8S_NODES=(gpu03 gpu04)
rw_setup select/rackwise_cons_tres "$here/one_budget_cluster.yaml" || exit 1
ports=$(rw_pick_ports 5) || exit 1
etcd_url=http://127.0.0.1:$ports
declare -A ledger_addr=([a]=127.0.0.1:$((ports + 2)) [b]=127.0.0.1:$((ports + 3))) ledger_pid=([a]="" [b]="")
ext_url=http://127.0.0.1:$((ports + 4))
sed -i "s/LEDGER_URL/${ledger_addr[a]},${ledger_addr[b]}/" "$RW_TMP/etc/rackwise.yaml"
# Each face with its own identity (its token, named by its own copy of the description); the test reads only.
rw_ledger_identities slurmctld-rwtest=slurm/rwtest/ rackwise-extender=k8s/ observer= || exit 1
cp "$RW_TMP/etc/rackwise.yaml" "$RW_TMP/etc/rackwise-extender.yaml"
rw_ledger_token "$RW_TMP/etc/rackwise.yaml" slurmctld-rwtest
rw_ledger_token "$RW_TMP/etc/rackwise-extender.yaml" rackwise-extender
RW_ETCD_PID="" api_pid="" api_url="" ext_pid="" sampler_pid="" job_stream_pid="" pod_stream_pid=""
LOG=$RW_TMP/log

stop_helpers() {
  local p
  touch "$RW_TMP/stop-streams" "$RW_TMP/stop-sampler"
  for p in $sampler_pid $job_stream_pid $pod_stream_pid; do kill -TERM "$p" 2>/dev/null; done
  for p in $ext_pid $api_pid ${ledger_pid[a]} ${ledger_pid[b]} $RW_ETCD_PID; do kill -TERM "$p" 2>/dev/null; done
  for p in $sampler_pid $job_stream_pid $pod_stream_pid $ext_pid $api_pid ${ledger_pid[a]} ${ledger_pid[b]} $RW_ETCD_PID; do
    wait "$p" 2>/dev/null
  done
}
# rw_teardown exits with the status it finds in $?: the script's, not stop_helpers'.
trap 'rc=$?; stop_helpers; (exit $rc); rw_teardown' EXIT

# --- daemons ------------------------------------------------------------------------------------------------

dump() { rw_log "--- last lines of $1:"; tail -n 20 "$1" >&2; }
# Fails the test at once when a daemon we did not mean to stop has died (rw_wait_for calls it).
rw_check_test_daemons() {
  local who
  for who in etcd api ext a b; do
    local pid log
    case $who in
      etcd) pid=$RW_ETCD_PID log=$LOG/etcd.log ;;
      api) pid=$api_pid log=$LOG/apiserver.log ;;
      ext) pid=$ext_pid log=$LOG/extender.log ;;
      *) pid=${ledger_pid[$who]} log=$LOG/ledger-$who.log ;;
    esac
    [[ -z $pid ]] || kill -0 "$pid" 2>/dev/null || { dump "$log"; rw_die "$who (pid $pid) has died"; }
  done
}
client() { "$RACKWISE_LEDGER_CLIENT" --token-file "$RW_TMP/etc/observer.token" "${ledger_addr[a]},${ledger_addr[b]}" "$@"; }
leader_key=$(printf '%s' /rackwise/ledger/onebudget/leader | base64 -w0)
# The replica id of the ledger's leader, from etcd's leader key ("<id> <address>"); empty when there is none.
leader() {
  curl -sf -X POST "$etcd_url/v3/kv/range" -d "{\"key\":\"$leader_key\"}" | jq -r '.kvs[0].value // empty' |
    base64 -d 2>/dev/null | cut -d' ' -f1
}
leads() { [[ $(leader) == "$1" ]]; }
start_ledger() {
  "$RACKWISE_LEDGER" --cluster "$RW_TMP/etc/rackwise.yaml" --etcd "$etcd_url" --listen "${ledger_addr[$1]}" \
    --name onebudget --replica-id "$1" --lease-ttl-s 2 --access-file "$RW_TMP/etc/ledger-access.yaml" \
    >>"$LOG/ledger-$1.log" 2>&1 &
  ledger_pid[$1]=$!
}
start_extender() {
  "$RACKWISE_EXTENDER" --cluster "$RW_TMP/etc/rackwise-extender.yaml" --kubeconfig "$RW_TMP/etc/kubeconfig" \
    --listen "${ext_url#http://}" --grpc-listen "" --state-file "$RW_TMP/state/extender.state.yaml" \
    >>"$LOG/extender.log" 2>&1 &
  ext_pid=$!
  rw_wait_for 30 curl -sf "$ext_url/readyz" -o /dev/null || { dump "$LOG/extender.log"; rw_fail "extender not ready"; exit 1; }
}
# 1 (the value) when the Slurm face / the extender are in fallback, 0 when shared.
slurm_fallback() { awk '$1 == "rackwise_ledger_fallback" {print $2}' "$RW_TMP/state/rackwise_ledger.prom" 2>/dev/null; }
ext_fallback() { curl -sf "$ext_url/metrics" | awk '$1 == "rackwise_ledger_fallback" {print $2}'; }
faces_shared() { [[ $(slurm_fallback) == 0 && $(ext_fallback) == 0 ]]; }

rw_start_etcd "$etcd_url" $((ports + 1)) "$LOG/etcd.log" || exit 1
start_ledger a
rw_wait_for 30 leads a || { dump "$LOG/ledger-a.log"; rw_fail "replica a did not lead"; exit 1; }
start_ledger b
rw_wait_for 30 grep -q "serving rackwise.v1.PowerLedger" "$LOG/ledger-b.log" || { rw_fail "replica b did not start"; exit 1; }
"$RACKWISE_FAKE_APISERVER" --nodes "$(IFS=,; echo "${K8S_NODES[*]}")" >"$LOG/apiserver.log" 2>&1 &
api_pid=$!
rw_wait_for 10 grep -q "^listening on " "$LOG/apiserver.log" || { rw_fail "the fake API server did not start"; exit 1; }
api_url=http://$(sed -n 's/^listening on //p' "$LOG/apiserver.log")
printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: fake" "  cluster:" "    server: $api_url" \
  "contexts:" "- name: fake" "  context: {cluster: fake, user: test}" "current-context: fake" "users:" \
  "- name: test" "  user: {}" >"$RW_TMP/etc/kubeconfig"
start_extender
rw_start || exit 1
rw_wait_for 30 faces_shared || { rw_fail "faces not shared: slurm '$(slurm_fallback)' extender '$(ext_fallback)'"; exit 1; }
rw_ok "etcd, ledger replicas a (leader) and b, the API server, the extender, slurmctld and 4 slurmd; both faces shared"

# --- what runs, and what the ledger holds -------------------------------------------------------------------

# "OWNER GPUS" lines, sorted: the RUNNING Slurm jobs and the bound pods (k8s/<namespace>/<uid>).
running_owners() {
  local jobs pods
  jobs=$(squeue -h -t R -o %i) || return 1
  pods=$(curl -sf "$api_url/_test/bound") || return 1
  {
    if [[ -n $jobs ]]; then awk -v g=$GPUS_EACH '{print "slurm/rwtest/" $1, g}' <<<"$jobs"; fi
    if [[ -n $pods ]]; then awk '{split($1, k, "/"); print "k8s/" k[1] "/" $2, $4}' <<<"$pods"; fi
  } | sort
}
ledger_owners() { client list | sort; }
ledger_is_running() {
  local want have
  want=$(running_owners) && have=$(ledger_owners) && [[ $want == "$have" ]]
}
# One side's owners in the ledger are what it runs (the other side may be changing meanwhile).
side_is_running() {
  local want have
  want=$(running_owners) && have=$(client list "$1") && [[ $(grep "^$1" <<<"$want") == "$(sort <<<"$have")" ]]
}
check_side() {
  if rw_wait_for 20 side_is_running "$1"; then rw_ok "$2: the ledger's $1 owners are what runs: $(client list "$1" | awk '{print $1}' | xargs)"
  else rw_fail "$2: the ledger's $1 owners '$(client list "$1" | xargs)', what runs '$(running_owners | xargs)'"; fi
}
# After a fault, with the streams stopped: the ledger holds exactly what runs, within the budget.
check_ledger_equals_running() {
  if rw_wait_for 30 ledger_is_running; then
    local held
    held=$(ledger_owners | awk '{s += $2} END {print s + 0}')
    if ((held <= BUDGET)); then
      rw_ok "$1: the ledger is what runs ($held GPUs): $(ledger_owners | awk '{print $1}' | xargs)"
    else
      rw_fail "$1: the ledger holds $held GPUs"
    fi
  else
    rw_fail "$1: the ledger holds '$(ledger_owners | xargs)', what runs is '$(running_owners | xargs)'"
  fi
}

# --- kube-scheduler's cycle for one pod ---------------------------------------------------------------------

# create_pod NAME: a pending pod of 2 GPUs in the API server; prints the object as the API server serves it.
create_pod() {
  jq -nc --arg name "$1" --arg gpus "$GPUS_EACH" '{metadata: {name: $name, namespace: "ml", labels: {app: "one-budget"}},
    spec: {schedulerName: "default-scheduler", containers: [{name: "main", image: "nvcr.io/nvidia/pytorch:24.01-py3",
      resources: {limits: {"nvidia.com/gpu": $gpus}, requests: {cpu: "8", "nvidia.com/gpu": $gpus}}}]},
    status: {phase: "Pending"}}' | curl -sf -X POST -H 'Content-Type: application/json' --data-binary @- "$api_url/_test/pods"
}
delete_pod() { curl -sf -X DELETE "$api_url/_test/pods/ml/$1" -o /dev/null; }
ext_post() { curl -sf -m 10 -X POST -H 'Content-Type: application/json' --data-binary @- "$ext_url/$1"; }
# schedule POD_JSON: filter over Kubernetes's nodes, prioritize the feasible ones, bind to the best, with
# kube-scheduler's ExtenderArgs / ExtenderBindingArgs (nodeCacheCapable: NodeNames, Nodes null). Prints the
# node; else returns 1 with the filter's answer or the bind's error in $RW_TMP/last-refusal.$REFUSAL_TAG.
schedule() {
  local pod=$1 args answer node
  args=$(jq -c --argjson names "$(printf '%s\n' "${K8S_NODES[@]}" | jq -R . | jq -sc .)" \
    '{Pod: ., Nodes: null, NodeNames: $names}' <<<"$pod") || return 1
  answer=$(ext_post filter <<<"$args") || { echo "filter: no answer" >"$RW_TMP/last-refusal.$REFUSAL_TAG"; return 1; }
  local feasible
  feasible=$(jq -c '.NodeNames // []' <<<"$answer")
  if [[ $feasible == "[]" ]]; then
    echo "$answer" >"$RW_TMP/last-refusal.$REFUSAL_TAG"
    return 1
  fi
  node=$(jq -r '.[0]' <<<"$feasible")
  if [[ $(jq length <<<"$feasible") -gt 1 ]]; then
    answer=$(jq -c --argjson names "$feasible" '.NodeNames = $names' <<<"$args" | ext_post prioritize) || return 1
    node=$(jq -r 'max_by(.Score).Host' <<<"$answer")
  fi
  answer=$(jq -nc --argjson pod "$pod" --arg node "$node" \
    '{PodName: $pod.metadata.name, PodNamespace: $pod.metadata.namespace, PodUID: $pod.metadata.uid, Node: $node}' |
    ext_post bind) || { echo "bind: no answer" >"$RW_TMP/last-refusal.$REFUSAL_TAG"; return 1; }
  if [[ -n $(jq -r '.Error // ""' <<<"$answer") ]]; then
    echo "$answer" >"$RW_TMP/last-refusal.$REFUSAL_TAG"
    return 1
  fi
  echo "$node"
}
REFUSAL_TAG=main  # the pod stream has its own
refusal() { cat "$RW_TMP/last-refusal.${1:-main}" 2>/dev/null; }
# As kube-scheduler retries an unschedulable pod: the extender's mirror of the other owners is refreshed every
# second, so room the other side has just given back may take that long to show.
schedule_retrying() { rw_wait_for 10 schedule "$1" >/dev/null; }
# Whether the ledger answers and holds no owner under $1.
ledger_empty() { local held; held=$(client list "${1:-}") && [[ -z $held ]]; }
bound_pods() { curl -sf "$api_url/_test/bound" | wc -l; }
submit() { rw_submit -N1 -p hgx -w "$1" --gres=gpu:$GPUS_EACH; }

# --- 1. the whole budget each -------------------------------------------------------------------------------

jobs=()
for i in 1 2 3 4; do jobs+=("$(submit "${SLURM_NODES[i % 2]}")"); done
for j in "${jobs[@]}"; do rw_wait_state "$j" RUNNING 30 || rw_fail "job $j not RUNNING: $(rw_reason "$j")"; done
j5=$(submit "${SLURM_NODES[0]}")
if rw_wait_reason "$j5" "power" 30; then rw_ok "Slurm alone runs 8 GPUs; job $j5 pends: $(rw_reason "$j5")"; else
  rw_fail "job $j5: want a pending reason naming power, got $(rw_state "$j5"): $(rw_reason "$j5")"; fi
check_ledger_equals_running "Slurm alone"
pod=$(create_pod solo-0) || { rw_fail "could not create a pod"; exit 1; }
if schedule "$pod" >/dev/null; then rw_fail "a pod was bound while Slurm holds the budget"; else
  rw_ok "a pod is refused while Slurm holds the budget: $(refusal | jq -c '.FailedNodes // .Error')"; fi
delete_pod solo-0
scancel "${jobs[@]}" "$j5"
rw_wait_for 30 ledger_empty slurm/rwtest/ || rw_fail "Slurm's owners not released: $(client list | xargs)"

for i in 1 2 3 4; do
  if ! pod=$(create_pod "solo-$i") || ! schedule_retrying "$pod"; then rw_fail "pod solo-$i not bound: $(refusal)"; fi
done
pod=$(create_pod solo-5) || { rw_fail "could not create a pod"; exit 1; }
if schedule "$pod" >/dev/null; then rw_fail "a fifth pod was bound: Kubernetes passed the budget"
elif refusal | grep -q power; then
  rw_ok "Kubernetes alone binds 8 GPUs; the fifth pod is refused: $(refusal | jq -c '.FailedNodes // .Error')"
else rw_fail "the fifth pod's refusal names no power: $(refusal)"; fi
delete_pod solo-5
j6=$(submit "${SLURM_NODES[0]}")
if rw_wait_reason "$j6" "power" 30; then rw_ok "job $j6 pends while Kubernetes holds the budget: $(rw_reason "$j6")"; else
  rw_fail "job $j6 while Kubernetes holds the budget: $(rw_state "$j6"): $(rw_reason "$j6")"; fi
check_ledger_equals_running "Kubernetes alone"
scancel "$j6"
for i in 1 2 3 4; do delete_pod "solo-$i"; done
rw_wait_for 30 ledger_empty || rw_fail "owners left after both sides ended: $(client list | xargs)"

# --- 2. both at once: streams and the sampler ----------------------------------------------------------------

# Slurm jobs that end when the stream says so (it creates end/<id> 3-5 s after it first sees the job RUNNING;
# the job then leaves ended/<id>), alternating between Slurm's nodes, up to 3 pending or running. Job ids go to
# jobs.log. Each side wants at most 3 at a time (6 GPUs): together they want more than the budget, and neither
# can starve the other. With pause-jobs it neither submits nor ends jobs (and says so in jobs-paused): Slurm's state holds
# still for slurmctld's kill.
job_stream() {
  local i=0 id now
  declare -A started=()
  while [[ ! -e $RW_TMP/stop-streams ]]; do
    if [[ -e $RW_TMP/pause-jobs ]]; then
      touch "$RW_TMP/jobs-paused"
      sleep 0.2
      continue
    fi
    now=$SECONDS
    for id in $(squeue -h -t R -o %i 2>/dev/null); do
      [[ -n ${started[$id]:-} ]] || started[$id]=$now
      ((now - ${started[$id]} >= 3 + id % 3)) && touch "$RW_TMP/end/$id"
    done
    if (($(squeue -h -t PD,R 2>/dev/null | wc -l) >= 3)); then sleep 0.3; continue; fi
    id=$(sbatch --parsable -o /dev/null -e /dev/null -D "$RW_TMP" -N1 -p hgx -w "${SLURM_NODES[i++ % 2]}" \
      --gres=gpu:$GPUS_EACH --wrap "$job_script" 2>/dev/null | cut -d';' -f1)
    [[ -n $id ]] && echo "$id" >>"$RW_TMP/jobs.log"
  done
}
mkdir -p "$RW_TMP/end" "$RW_TMP/ended"
job_script="while [ ! -e $RW_TMP/end/\$SLURM_JOB_ID ]; do sleep 0.2; done; touch $RW_TMP/ended/\$SLURM_JOB_ID"
# Pods created, scheduled and deleted 3-5 s after their binding (a refused one is deleted at once), up to 3
# bound at a time. Each binding goes to bound.log. Bound pods left by an earlier stream are deleted in their turn.
pod_stream() {
  local round=$1 i=0 name pod node now held REFUSAL_TAG=stream
  declare -A bound_at=()
  while [[ ! -e $RW_TMP/stop-streams ]]; do
    now=$SECONDS held=0
    while read -r key _; do
      [[ -n $key ]] || continue
      name=${key#ml/}
      [[ -n ${bound_at[$name]:-} ]] || bound_at[$name]=$now
      if ((now - ${bound_at[$name]} >= 3 + ${#name} % 3)) && delete_pod "$name"; then
        unset "bound_at[$name]"
      else
        held=$((held + 1))
      fi
    done < <(curl -sf "$api_url/_test/bound")
    if ((held >= 3)); then sleep 0.3; continue; fi
    name=r$round-$((i++))
    pod=$(create_pod "$name") || { sleep 0.2; continue; }
    if node=$(schedule "$pod"); then
      bound_at[$name]=$SECONDS
      echo "$name $node" >>"$RW_TMP/bound.log"
    else
      delete_pod "$name"
      sleep 0.2
    fi
  done
}
# Every sample: RUNNING jobs (squeue), then bound pods, then RUNNING jobs again; the jobs in both squeue
# samples surely ran at the pods' sample. Their GPUs and the pods' must stay within the budget.
sampler() {
  local s1 s2 pods jobs_gpus pod_gpus samples=0 skipped=0
  while [[ ! -e $RW_TMP/stop-sampler ]]; do
    s1=$(squeue -h -t R -o %i 2>/dev/null) || { skipped=$((skipped + 1)); continue; }
    pods=$(curl -sf "$api_url/_test/bound") || { skipped=$((skipped + 1)); continue; }
    s2=$(squeue -h -t R -o %i 2>/dev/null) || { skipped=$((skipped + 1)); continue; }
    jobs_gpus=$(($(comm -12 <(sort <<<"$s1") <(sort <<<"$s2") | grep -c .) * GPUS_EACH))
    pod_gpus=$(awk '{s += $4} END {print s + 0}' <<<"$pods")
    samples=$((samples + 1))
    if ((jobs_gpus + pod_gpus > BUDGET)); then
      echo "$(date -u +%T.%N) Slurm $jobs_gpus ($(comm -12 <(sort <<<"$s1") <(sort <<<"$s2") | xargs)) +" \
        "Kubernetes $pod_gpus ($(awk '{print $1}' <<<"$pods" | xargs)) > $BUDGET" >>"$RW_TMP/violations"
    fi
    ((jobs_gpus > 0 && pod_gpus > 0)) && echo "$jobs_gpus $pod_gpus" >>"$RW_TMP/shared-samples"
    echo "$samples $skipped" >"$RW_TMP/sampler-count"
    sleep 0.05  # pacing only: leave slurmctld some of the two cores
  done
}
start_streams() {
  rm -f "$RW_TMP/stop-streams" "$RW_TMP/pause-jobs"
  job_stream &
  job_stream_pid=$!
  pod_stream "$1" &
  pod_stream_pid=$!
}
# Stops both streams (each ends its current step), then cancels the pending jobs: what runs may only end now.
stop_streams() {
  touch "$RW_TMP/stop-streams"
  local p
  for p in $job_stream_pid $pod_stream_pid; do
    rw_wait_for 60 eval "! kill -0 $p 2>/dev/null" || rw_fail "a stream did not stop"
    wait "$p" 2>/dev/null
  done
  job_stream_pid="" pod_stream_pid=""
  scancel -t PENDING --user=root 2>/dev/null
}
last_job() { tail -n 1 "$RW_TMP/jobs.log" | grep . || echo 0; }
binds() { wc -l <"$RW_TMP/bound.log"; }
# Both sides placed something after the marks: a job above id $1 RUNNING (or ended), a pod bound past count $2.
job_started_after() { [[ -n $(squeue -h -t R,CG,CD -o %i | awk -v x="$1" '$1 > x') ]]; }
pod_bound_after() { (($(binds) > $1)); }
both_run() { [[ -n $(squeue -h -t R -o %i) && $(bound_pods) -gt 0 ]]; }
ended_jobs() { find "$RW_TMP/ended" -type f | wc -l; }
# Both streams have turned over: 3 more jobs ended and 3 more pods bound than at the marks $1 and $2.
turned_over() { (($(ended_jobs) >= $1 + 3 && $(binds) >= $2 + 3)); }
run_together() {
  local ended bound
  ended=$(ended_jobs) bound=$(binds)
  rw_wait_for 60 both_run || rw_fail "$1: Slurm jobs and pods never ran together"
  rw_wait_for 60 turned_over "$ended" "$bound" || rw_fail "$1: the streams did not turn over: $(ended_jobs) jobs ended, $(binds) pods bound"
}
progress_after() {
  local j=$1 p=$2
  rw_wait_for 60 job_started_after "$j" || rw_fail "$3: no Slurm job started after job $j: $(squeue -o '%i %T %r' | tail -n 3 | xargs)"
  rw_wait_for 60 pod_bound_after "$p" || rw_fail "$3: no pod bound after $p bindings: $(refusal stream)"
  run_together "$3"
}
: >"$RW_TMP/violations"
: >"$RW_TMP/shared-samples"
: >"$RW_TMP/jobs.log"
: >"$RW_TMP/bound.log"
echo "0 0" >"$RW_TMP/sampler-count"
sampler &
sampler_pid=$!

# --- 3. faults while both run --------------------------------------------------------------------------------

# Ledger leader.
start_streams 1
run_together "before the leader's kill"
victim=$(leader)
[[ $victim == [ab] ]] || { rw_fail "no leader in etcd: '$victim'"; exit 1; }
other=$([[ $victim == a ]] && echo b || echo a)
kill -KILL "${ledger_pid[$victim]}"
wait "${ledger_pid[$victim]}" 2>/dev/null
ledger_pid[$victim]=""
marks=("$(last_job)" "$(binds)")
if rw_wait_for 30 leads "$other"; then rw_ok "leader $victim killed: replica $other leads"; else
  dump "$LOG/ledger-$other.log"; rw_fail "replica $other did not take over (leader: '$(leader)')"; fi
start_ledger "$victim"
rw_wait_for 30 faces_shared || rw_fail "faces not back after the failover: slurm $(slurm_fallback), extender $(ext_fallback)"
progress_after "${marks[@]}" "after the failover"
stop_streams
check_ledger_equals_running "after the leader's kill"
rw_wait_for 10 grep -q "serving rackwise.v1.PowerLedger" "$LOG/ledger-$victim.log" || rw_fail "replica $victim not back"

# slurmctld. kill -9 loses what slurmctld has not saved yet (it saves at most every 5 s): a job started since
# comes back pending or unknown and its id is used again ("Duplicate jobid", the node drained), one ended since
# comes back RUNNING for minutes. That is Slurm's, not rackwise's, so Slurm's state is made to hold still and be
# saved first: the job stream pauses (no submission, no job ended), pending jobs are cancelled, one job's comment
# is changed and the save that follows is awaited. Jobs run and pods come and go across the kill, and one job
# ends while slurmctld is down.
start_streams 2
run_together "before slurmctld's kill"
paused_with_jobs() {
  rm -f "$RW_TMP/jobs-paused"
  touch "$RW_TMP/pause-jobs"
  rw_wait_for 30 test -e "$RW_TMP/jobs-paused" || return 1
  [[ -n $(squeue -h -t R -o %i) ]] && return 0
  rm -f "$RW_TMP/pause-jobs"  # every job ended before the pause: let another start
  return 1
}
rw_wait_for 60 paused_with_jobs || rw_fail "no Slurm job ran when the job stream paused"
scancel -t PENDING --user=root
# Nothing pending or completing, and no running job told to end.
slurm_still() {
  local id
  [[ -z $(squeue -h -t PD,CG -o %i) ]] || return 1
  for id in $(squeue -h -t R -o %i); do [[ ! -e $RW_TMP/end/$id ]] || return 1; done
}
rw_wait_for 30 slurm_still || rw_fail "Slurm's jobs did not settle: $(squeue -h -o '%i %T' | xargs)"
running_at_kill=$(squeue -h -t R -o %i | xargs)
touch "$RW_TMP/save-mark"
scontrol update jobid="${running_at_kill%% *}" comment=saved-before-kill
saved() { [[ $RW_TMP/state/job_state -nt $RW_TMP/save-mark ]]; }
rw_wait_for 20 saved || rw_fail "slurmctld did not save its job state"
kill -KILL "$RW_CTLD_PID"
wait "$RW_CTLD_PID" 2>/dev/null
RW_CTLD_PID=""
ending=${running_at_kill%% *}
touch "$RW_TMP/end/$ending"
rw_wait_for 20 test -e "$RW_TMP/ended/$ending" || rw_fail "job $ending did not end while slurmctld was down"
marks=("$(last_job)" "$(binds)")
rw_start_ctld || { rw_fail "slurmctld did not restart"; exit 1; }
rw_ok "slurmctld killed while jobs $running_at_kill ran (job $ending ended meanwhile) and restarted"
check_side slurm/rwtest/ "slurmctld restarted, its job stream still paused"
rm -f "$RW_TMP/pause-jobs"
rw_wait_for 30 faces_shared || rw_fail "Slurm face not back after the restart: $(slurm_fallback)"
rw_wait_for 30 eval '! squeue -h -j '"$ending"' -t R | grep -q .' || rw_fail "job $ending still RUNNING after the restart"
progress_after "${marks[@]}" "after slurmctld's restart"
stop_streams
check_ledger_equals_running "after slurmctld's kill"

# rackwise-extender.
start_streams 3
run_together "before the extender's kill"
kill -KILL "$ext_pid"
wait "$ext_pid" 2>/dev/null
ext_pid=""
gone_mark=$(curl -sf "$api_url/_test/bound" | awk '{print $1}' | xargs)
one_deleted() { local k; for k in $gone_mark; do curl -sf "$api_url/_test/bound" | grep -q "^$k " || return 0; done; return 1; }
[[ -n $gone_mark ]] && { rw_wait_for 20 one_deleted || rw_fail "no bound pod was deleted while the extender was down"; }
marks=("$(last_job)" "$(binds)")
start_extender
rw_ok "rackwise-extender killed while pods ran (one deleted meanwhile) and restarted"
check_side k8s/ "the extender restarted (the pods still bound adopted)"
rw_wait_for 30 faces_shared || rw_fail "extender not back to the ledger: $(ext_fallback)"
progress_after "${marks[@]}" "after the extender's restart"
stop_streams
check_ledger_equals_running "after the extender's kill"

touch "$RW_TMP/stop-sampler"
wait "$sampler_pid" 2>/dev/null
sampler_pid=""
read -r samples skipped <"$RW_TMP/sampler-count"
shared=$(wc -l <"$RW_TMP/shared-samples")
if [[ -s $RW_TMP/violations ]]; then
  rw_fail "the budget was passed at $(wc -l <"$RW_TMP/violations") of $samples samples:"
  head -n 10 "$RW_TMP/violations" >&2
else
  rw_ok "$samples samples ($shared with both sides running, $skipped skipped while slurmctld was down): never above $BUDGET GPUs"
fi
((shared > 0)) || rw_fail "no sample saw both sides running at once"
rw_log "jobs submitted by the stream: $(wc -l <"$RW_TMP/jobs.log"), pods bound: $(binds)"
rw_check_never
((RW_FAILS == 0))
