#!/usr/bin/env bash
# GPU power limits enforced by spank_rackwise.so in a real slurmd, against a fake libnvidia-ml.so.1 per node
# (tests/fake_nvml: GPUs of 200-700 W in a state file the prolog, the epilog and this script all see, and a log of
# every NVML call). Three nodes: gpu01 healthy, gpu02 refuses nvmlDeviceSetPowerManagementLimit (no permission),
# gpu03's boards cannot go below 500 W.
#  - an undeclared job (the node type's 962.5 W per GPU is above the boards' 700 W maximum) runs with no limit
#    changed;
#  - `sbatch --gpus=2 --gpu-watts=450` gets exactly its GPU indices limited to 450 W while it runs, restored to
#    700 W when it ends;
#  - a job whose limit cannot be set (refused, or below the board's minimum) does not run: the node is drained
#    with a reason naming rackwise and the cause, and the job is requeued; once the cause is gone and the node
#    resumed, the requeued job runs there with its limit;
#  - slurmd skips the prolog of a job it saw within AuthInfo cred_expire: when the administrator undoes Slurm's
#    requeue delay (starttime=now), the select plugin keeps the job off that node until the window has passed
#    (pending reason naming the skipped prolog), so that it never runs unlimited;
#  - rackwise.yaml truncated on the nodes while a job runs: its epilog still gives its limits back (from the
#    lease file the last accepted description names), a new job declaring nothing gets the GPUs at their full
#    default limit, a probe job declaring watts starts and is limited, and no node is drained.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins RW_FAKE_NVML=<build>/tests/fake_nvml/lib/libnvidia-ml.so.1 \
#        test_power_enforcement.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
[[ -f ${RW_FAKE_NVML:-} ]] || { echo "FAIL: RW_FAKE_NVML (the fake libnvidia-ml.so.1) not set or missing" >&2; exit 1; }

# The prolog runs on every node at allocation.
# A short credential window (Slurm's minimum is 5 s) keeps the requeue part quick: 20 s + KillWait + 1.
RW_EXTRA_CONF=$'PrologFlags=Alloc\nAuthInfo=cred_expire=20\nKillWait=5' RW_SPANK=required \
  rw_setup select/rackwise_cons_tres "$here/enforce_cluster.yaml"
# Each node keeps the last rackwise.yaml it accepted in its own cache directory (several slurmd on one host).
echo "required ${RW_PLUGIN_DIR}/spank_rackwise.so cache_dir=$RW_TMP/cache/%n" >"$RW_TMP/etc/plugstack.conf"
rw_enforce_limits "$RW_TMP/etc/rackwise.yaml"
for n in gpu01 gpu02 gpu03; do
  mkdir -p "$RW_TMP/nvml/$n"
  cp "$RW_FAKE_NVML" "$RW_TMP/nvml/$n/libnvidia-ml.so.1"
  min=200000
  [[ $n == gpu03 ]] && min=500000
  for g in 0 1 2 3 4 5 6 7; do echo "gpu GPU-$n-$g $min 700000 700000 700000 80000"; done >"$RW_TMP/nvml/$n/fake_nvml.state"
done
echo "fail nvmlDeviceSetPowerManagementLimit 4" >>"$RW_TMP/nvml/gpu02/fake_nvml.state"
rw_start || exit 1

# "idx=limit_mw ..." of a node's fake GPUs.
limits() { awk '$1 == "gpu" {printf "%s%d=%s", (n++ ? " " : ""), n - 1, $6} END {print ""}' "$RW_TMP/nvml/$1/fake_nvml.state"; }
# The limits a node shows when GPUs in the comma list $2 are at $3 mW and the others at 700000.
expected() {
  local g out=""
  for g in 0 1 2 3 4 5 6 7; do
    if [[ ,$2, == *,$g,* ]]; then out+="$g=$3 "; else out+="$g=700000 "; fi
  done
  echo "${out% }"
}
sets() { grep -c 'nvmlDeviceSetPowerManagementLimit' "$RW_TMP/nvml/$1/fake_nvml.state.log" 2>/dev/null; }
limits_are() { [[ $(limits "$1") == "$2" ]]; }
gpus_on() { rw_job_gpus "$1" | awk -v node="$2" '$1 == node {print $2}'; }  # the job's GPU indices there: "1,3"
node_state() { sinfo -h -n "$1" -o %t 2>/dev/null; }
node_drained() { [[ $(node_state "$1") == drain || $(node_state "$1") == drng ]]; }
node_reason() { scontrol show node "$1" | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p'; }
restarts() { scontrol show job "$1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2; }
gone() { [[ -z $(rw_state "$1") ]]; }
# runs_limited JOB NODE WHAT: JOB (--gpu-watts=450) starts on NODE with exactly its GPUs there at 450 W.
runs_limited() {
  local job=$1 node=$2 what=$3 gpus
  if ! rw_wait_state "$job" RUNNING 60; then
    rw_fail "$what job ${job:-?} did not run: $(rw_state "$job") $(rw_reason "$job"), $node $(node_state "$node")" \
      "$(node_reason "$node")"
    return 1
  fi
  gpus=$(gpus_on "$job" "$node")
  rw_wait_for 20 limits_are "$node" "$(expected "$node" "$gpus" 450000)" &&
    rw_ok "$what job $job runs on $node with GPUs $gpus at 450 W" ||
    rw_fail "$what job $job on $node GPUs $gpus: limits $(limits "$node")"
}

# --- an undeclared job: counted at 962.5 W per GPU, above the boards' maximum: nothing to limit -----------
u=$(rw_submit -w gpu01 --gpus=1)
rw_wait_state "$u" RUNNING 20 && rw_ok "undeclared job $u runs on gpu01 ($(rw_job_gpus "$u"))" ||
  rw_fail "undeclared job ${u:-?}: $(rw_state "$u") $(rw_reason "$u")"
[[ $(sets gpu01) -eq 0 && $(limits gpu01) == "$(expected gpu01 "" 0)" ]] &&
  rw_ok "no NVML call changed a limit for the undeclared job" || rw_fail "undeclared job changed limits: $(limits gpu01)"

# --- --gpus=2 --gpu-watts=450: exactly the job's GPUs at 450 W while it runs, 700 W again after ---------
d=$(rw_submit -w gpu01 --gpus=2 --gpu-watts=450)
rw_wait_state "$d" RUNNING 20 || rw_fail "declared job ${d:-?}: $(rw_state "$d") $(rw_reason "$d")"
idx=$(gpus_on "$d" gpu01)
[[ $idx == *,* && $idx != *0* ]] || rw_fail "declared job $d got GPUs '$idx' (the undeclared job holds 0)"
if rw_wait_for 20 limits_are gpu01 "$(expected gpu01 "$idx" 450000)"; then
  rw_ok "job $d (--gpu-watts=450) runs with exactly its GPUs $idx limited to 450 W: $(limits gpu01)"
else
  rw_fail "job $d on GPUs $idx: limits $(limits gpu01)"
fi
scancel "$d"
if rw_wait_for 20 limits_are gpu01 "$(expected gpu01 "" 0)"; then
  rw_ok "job $d ended: its GPUs are back at 700 W ($(sets gpu01) limit changes in all)"
else
  rw_fail "job $d ended, limits $(limits gpu01)"
fi
[[ $(sets gpu01) -eq 4 ]] || rw_fail "expected 4 limit changes on gpu01 (2 set, 2 restored): $(grep Set "$RW_TMP/nvml/gpu01/fake_nvml.state.log")"
scancel "$u"

# --- a limit the board refuses: drained with the cause, job requeued, nothing left limited -------------
f=$(rw_submit -w gpu02 --gpus=2 --gpu-watts=450)
if rw_wait_for 30 node_drained gpu02; then
  reason=$(node_reason gpu02)
  [[ $reason == "rackwise: job $f: cannot limit 450 W per GPU on GPUs "*"Insufficient Permissions"* ]] &&
    rw_ok "gpu02 drained: $reason" || rw_fail "gpu02 drained with reason '$reason'"
else
  rw_fail "gpu02 not drained: $(node_state gpu02) $(node_reason gpu02)"
fi
# Slurm requeues a job whose prolog failed, held (unless SchedulerParameters=nohold_on_prolog_fail).
rw_wait_for 20 test "$(restarts "$f")" -ge 1 && [[ $(rw_state "$f") == PENDING ]] &&
  rw_ok "job $f requeued (Restarts=$(restarts "$f"), PENDING: $(rw_reason "$f"))" ||
  rw_fail "job $f not requeued: $(rw_state "$f") restarts=$(restarts "$f") $(rw_reason "$f")"
[[ $(limits gpu02) == "$(expected gpu02 "" 0)" ]] && rw_ok "no GPU of gpu02 left limited" ||
  rw_fail "gpu02 limits $(limits gpu02)"
[[ -z $(grep -v '^#' "$RW_TMP/nvml/gpu02/gpu-power-limits" 2>/dev/null) ]] || rw_fail "gpu02 leases left"

# The administrator fixes the cause, resumes the node and releases the job, and asks for it to start now rather
# than after the delay Slurm gives a requeued job. slurmd would not run its prolog again yet (it still knows the
# job), so rackwise holds it off gpu02 until the credential window has passed; then it runs there, limited.
sed -i '/^fail /d' "$RW_TMP/nvml/gpu02/fake_nvml.state"
scontrol update nodename=gpu02 state=resume
scontrol release "$f"
scontrol update jobid="$f" starttime=now
skip_reason() { [[ $(rw_reason "$f") == *"skip its prolog"* ]]; }
if rw_wait_for 15 skip_reason; then
  rw_ok "requeued job $f held off gpu02 while slurmd would skip its prolog: $(rw_reason "$f")"
else
  rw_fail "requeued job $f: $(rw_state "$f") '$(rw_reason "$f")', expected the skipped-prolog reason"
fi
runs_limited "$f" gpu02 "after scontrol update state=resume, requeued"
scancel "$f"

# --- below the board's minimum (gpu03's boards: 500-700 W) ----------------------------------------------
m=$(rw_submit -w gpu03 --gpus=1 --gpu-watts=450)
if rw_wait_for 30 node_drained gpu03; then
  reason=$(node_reason gpu03)
  [[ $reason == *"450 W is outside the board's power limit range 500 W to 700 W"* ]] &&
    rw_ok "below the board minimum: gpu03 drained: $reason" || rw_fail "gpu03 drained with reason '$reason'"
else
  rw_fail "gpu03 not drained: $(node_state gpu03) $(node_reason gpu03)"
fi
[[ $(rw_state "$m") != RUNNING && $(sets gpu03) -eq 0 ]] && rw_ok "job $m did not run on gpu03, no limit changed" ||
  rw_fail "job $m: $(rw_state "$m"), $(sets gpu03) limit changes on gpu03"
scancel "$m"
rw_wait_for 20 gone "$f" || rw_fail "job $f did not end"
rw_wait_for 20 limits_are gpu02 "$(expected gpu02 "" 0)" || rw_fail "gpu02 not restored after job $f: $(limits gpu02)"

# --- rackwise.yaml broken on the nodes while jobs run ---------------------------------------------------------
scontrol update nodename=gpu03 state=resume  # drained on purpose above
rw_wait_for 20 eval '! node_drained gpu03' || rw_fail "gpu03 not resumed: $(node_state gpu03)"
copy=$RW_TMP/cache/gpu01/rackwise.last-accepted.yaml
cmp -s "$copy" "$RW_TMP/etc/rackwise.yaml" && rw_ok "gpu01 kept the description it accepted in $copy" ||
  rw_fail "no accepted copy in $copy"
b=$(rw_submit -w gpu01 --gpus=4 --gpu-watts=450)
rw_wait_state "$b" RUNNING 20 || rw_fail "job ${b:-?}: $(rw_state "$b") $(rw_reason "$b")"
bidx=$(gpus_on "$b" gpu01)
rw_wait_for 20 limits_are gpu01 "$(expected gpu01 "$bidx" 450000)" || rw_fail "job $b on GPUs $bidx: $(limits gpu01)"
cp "$RW_TMP/etc/rackwise.yaml" "$RW_TMP/rackwise.yaml.good"
head -c 150 "$RW_TMP/rackwise.yaml.good" >"$RW_TMP/etc/rackwise.yaml"  # cut mid-file, as an interrupted copy
scancel "$b"
if rw_wait_for 20 gone "$b" && rw_wait_for 20 limits_are gpu01 "$(expected gpu01 "" 0)"; then
  rw_ok "rackwise.yaml broken: job $b's epilog still gave GPUs $bidx back (700 W)"
else
  rw_fail "rackwise.yaml broken: job $b ended, gpu01 limits $(limits gpu01)"
fi
n=$(rw_submit -w gpu01 --gpus=8)
if rw_wait_state "$n" RUNNING 20 && [[ $(limits gpu01) == "$(expected gpu01 "" 0)" ]]; then
  rw_ok "rackwise.yaml broken: job $n declaring nothing runs on all of gpu01 at the full default 700 W"
else
  rw_fail "rackwise.yaml broken: job ${n:-?} $(rw_state "$n") $(rw_reason "$n"), gpu01 limits $(limits gpu01)"
fi
p=$(rw_submit -w gpu02 --gpus=1 --gpu-watts=450)
runs_limited "$p" gpu02 "rackwise.yaml broken: probe (--gpu-watts=450)"
drained=$(sinfo -h -t drain -o %N | paste -sd,)
[[ -z $drained ]] && rw_ok "rackwise.yaml broken: no node drained" || rw_fail "drained while rackwise.yaml was broken: $drained"
cmp -s "$copy" "$RW_TMP/rackwise.yaml.good" || rw_fail "the broken rackwise.yaml replaced the accepted copy $copy"
scancel "$n" "$p"
rw_wait_for 20 gone "$p" && rw_wait_for 20 limits_are gpu02 "$(expected gpu02 "" 0)" ||
  rw_fail "probe job $p ended, gpu02 limits $(limits gpu02)"
cp "$RW_TMP/rackwise.yaml.good" "$RW_TMP/etc/rackwise.yaml"
rw_wait_for 20 gone "$n" || rw_fail "job $n did not end"
exit $((RW_FAILS != 0))
