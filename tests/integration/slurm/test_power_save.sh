#!/usr/bin/env bash
# Slurm's power saving with select/rackwise_cons_tres in a real slurmctld and real slurmd on 127.0.0.1: a node
# suspended with `scontrol update state=power_down` (idle~) stays usable: a job that only it can hold (-w) is
# allocated to it (CONFIGURING) and Slurm runs ResumeProgram. Suspending stops the node's slurmd and resuming
# starts it (lib.sh, RW_POWER_SAVE); whether Slurm then accepts the restarted slurmd as a resumed node is Slurm's
# business and not checked here (on loopback it waits for ResumeTimeout). Treating powered-down nodes as down
# would leave such a job pending for ever with a rackwise reason.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins test_power_save.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
RW_POWER_SAVE=1 rw_setup select/rackwise_cons_tres "$here/cluster.yaml"
rw_start || exit 1

node=gpu03
scontrol update nodename=$node state=power_down reason=rackwise-test || rw_fail "scontrol power_down $node"
state=""
for ((t = 0; t < 300; t++)); do
  state=$(sinfo -h -n $node -o %t 2>/dev/null)
  [[ $state == "idle~" ]] && break
  sleep 0.2
done
if [[ $state == "idle~" ]]; then
  rw_ok "$node powered down ($state), its slurmd stopped"
else
  rw_fail "$node did not power down: $state"
fi
j=$(rw_submit -p hgx -w $node --gpus=8 --nvlink=required)
[[ -n $j ]] || rw_fail "sbatch -w $node refused: $(cat "$RW_TMP/sbatch.err")"
# Allocated means out of PENDING: CONFIGURING while Slurm resumes the node (then RUNNING once it is back).
state=""
for ((t = 0; t < 150; t++)); do
  state=$(rw_state "$j")
  [[ $state == CONFIGURING || $state == RUNNING ]] && break
  sleep 0.2
done
if [[ $state == CONFIGURING || $state == RUNNING ]]; then
  rw_ok "a job that only the powered-down $node can hold was allocated to it ($state; Slurm resumes the node)"
  [[ $(rw_job_nodes "$j") == "$node" ]] || rw_fail "job $j is on $(rw_job_nodes "$j" | paste -sd,), not $node"
  gpus=$(rw_job_gpus "$j")
  [[ $gpus == "$node 0,1,2,3,4,5,6,7" ]] && rw_ok "with all 8 GPUs ($gpus)" || rw_fail "job $j GPUs: $gpus"
  # slurmctld's power-save thread runs ResumeProgram on its own beat (power_save_interval=1), after the
  # allocation: wait for it rather than look once.
  resumed=""
  for ((t = 0; t < 100; t++)); do
    grep -q "resume $node" "$RW_TMP/log/power.log" 2>/dev/null && { resumed=1; break; }
    rw_check_ctld
    sleep 0.2
  done
  [[ -n $resumed ]] && rw_ok "ResumeProgram was run for $node" || rw_fail "ResumeProgram was not run for $node in 20 s"
else
  rw_fail "job ${j:-?} for the powered-down $node: ${state:-gone}, reason $(rw_reason "$j");" \
    "node: $(sinfo -h -n $node -o '%t %E')"
fi
exit $((RW_FAILS != 0))
