# A real Slurm cluster on 127.0.0.1 for the integration tests: one slurmctld and one slurmd per node (slurmd
# built with --enable-multiple-slurmd), free ports picked at run time, fake GPUs as symlinks to /dev/null,
# everything (state, spool, logs, configs) in a temp dir that is removed afterwards. Source it; see test_*.sh.
# Needs root (slurmd runs jobs as their user).
#
# Environment: RW_PLUGIN_DIR (our built .so files for this Slurm), RW_SLURM_PREFIX (an installed Slurm, e.g.
# a 24.11 build from scripts/fetch-slurm-debian.sh; unset: Debian's 22.05 packages), RW_KEEP=1 keeps the temp
# dir. Every wait fails at once, with the daemons' logs, when slurmctld or a slurmd we started has died.
# RW_SRC_DIR (this directory); for rw_setup: RW_EXTRA_CONF (lines appended to slurm.conf; a repeated key
# overrides the one above), RW_SPANK=required (plugstack.conf's mode for spank_rackwise.so; default optional).

set -uo pipefail
RW_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # this directory (live_checker.py is beside it)

if [[ -n ${RW_SLURM_PREFIX:-} ]]; then
  RW_SBIN=$RW_SLURM_PREFIX/sbin
  RW_BIN=$RW_SLURM_PREFIX/bin
  RW_SLURM_PLUGINS=$RW_SLURM_PREFIX/lib/slurm
else
  RW_SBIN=/usr/sbin
  RW_BIN=/usr/bin
  RW_SLURM_PLUGINS=/usr/lib/x86_64-linux-gnu/slurm-wlm
fi
RW_DEBIAN_PLUGINS=$RW_SLURM_PLUGINS  # the old name, kept for scripts that use it
export PATH="$RW_BIN:$RW_SBIN:$PATH"  # squeue, sbatch, scontrol, ... of the Slurm under test
RW_NODES=()            # node names, in slurm.conf order
declare -A RW_NODE_GPUS=()
RW_PIDS=()             # daemons we started
RW_CTLD_PID=""
RW_TMP=""
RW_FAILS=0

rw_log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
rw_fail() { rw_log "FAIL: $*"; RW_FAILS=$((RW_FAILS + 1)); }
rw_ok() { rw_log "ok: $*"; }

# Exit 77 (CTest's skip code) when this machine cannot run real daemons, unless CI is set: there they are
# installed, and a skip would hide a broken setup.
rw_require() {
  local why=""
  [[ $(id -u) -eq 0 ]] || why="not root (slurmd must run as root)"
  for b in $RW_SBIN/slurmctld $RW_SBIN/slurmd $RW_BIN/sbatch $RW_BIN/squeue $RW_BIN/scontrol $RW_BIN/sdiag; do
    [[ -x $b ]] || why="${why:+$why; }$b missing (apt-get install slurmctld slurmd slurm-client, or scripts/fetch-slurm-debian.sh)"
  done
  [[ -f $RW_SLURM_PLUGINS/select_cons_tres.so ]] || why="${why:+$why; }$RW_SLURM_PLUGINS/select_cons_tres.so missing"
  [[ -f ${RW_PLUGIN_DIR:-}/select_rackwise_cons_tres.so ]] || why="${why:+$why; }plugin not built in ${RW_PLUGIN_DIR:-?}"
  if [[ -n $why ]]; then
    if [[ -n ${CI:-} ]]; then
      echo "FAIL: cannot run the Slurm integration tests in CI: $why" >&2
      exit 1
    fi
    echo "SKIP: Slurm integration tests need: $why" >&2
    exit 77
  fi
}

# Prints a base port such that base..base+count are all free on 127.0.0.1 and below the kernel's ephemeral range
# (ip_local_port_range): a port in that range can become the source port of any outgoing connection (44 slurmd
# registering make many) between the pick and the daemon's bind, and the daemon then dies at start (the likely
# cause of a slurmd that died within a second of its start in CI).
# Ports already handed out in this test (RW_TMP/ports-taken) count as used: a range is picked before its daemon
# binds it, so without the list a test's own services and its slurmds could be given overlapping ranges (a slurmd
# in CI died at start on "Address already in use" for a port the same test had picked for another daemon).
rw_pick_ports() {
  local count=$1 base used tries=0 ephemeral floor=10000 taken=${RW_TMP:+$RW_TMP/ports-taken}
  read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral=32768
  ((ephemeral - count - 1 > floor + 100)) || floor=1024
  used=$({
    ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://'
    [[ -n $taken && -f $taken ]] && cat "$taken"
  } | sort -un)
  while ((tries++ < 200)); do
    base=$((floor + (RANDOM * 32768 + RANDOM) % (ephemeral - count - 1 - floor)))
    local clash=0 p
    for ((p = base; p <= base + count; p++)); do
      if grep -qx "$p" <<<"$used"; then clash=1; break; fi
    done
    ((clash)) && continue
    [[ -z $taken ]] || seq "$base" $((base + count)) >>"$taken"
    echo "$base"
    return 0
  done
  echo "no free port range" >&2
  return 1
}

# Expands "pre[01-04,07]suf" (one bracket group) or a plain name; scontrol needs a slurm.conf to do this.
rw_expand() {
  local h=$1
  if [[ ! $h =~ ^([^[]*)\[([^]]*)\](.*)$ ]]; then echo "$h"; return; fi
  local pre=${BASH_REMATCH[1]} body=${BASH_REMATCH[2]} suf=${BASH_REMATCH[3]} part
  IFS=, read -ra parts <<<"$body"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      local lo=${part%-*} hi=${part#*-} width i
      width=${#lo}
      for ((i = 10#$lo; i <= 10#$hi; i++)); do printf '%s%0*d%s\n' "$pre" "$width" "$i" "$suf"; done
    else
      echo "$pre$part$suf"
    fi
  done
}

# Reads the node list (name + GPUs) from a description's racks.
rw_nodes_from_yaml() {
  local yaml=$1 type="" nodes=""
  RW_NODES=()
  while IFS= read -r line; do
    if [[ $line =~ ^[[:space:]]+type:[[:space:]]*([^[:space:]#]+) ]]; then type=${BASH_REMATCH[1]}; fi
    if [[ $line =~ ^[[:space:]]+nodes:[[:space:]]*([^[:space:]#]+) ]]; then
      nodes=${BASH_REMATCH[1]}
      local gpus=8
      [[ $type == gb200-tray ]] && gpus=4
      local n
      for n in $(rw_expand "$nodes"); do
        RW_NODES+=("$n")
        RW_NODE_GPUS[$n]=$gpus
      done
    fi
  done <"$yaml"
}

# rw_setup SELECT YAML [TOPOLOGY_CONF]: writes slurm.conf, gres.conf, plugstack.conf and rackwise.yaml into a
# new temp dir. SELECT is select/rackwise_cons_tres or select/cons_tres (the baseline, with topology/tree, or
# RW_TOPOLOGY_PLUGIN, when TOPOLOGY_CONF is given).
rw_setup() {
  local select=$1 yaml=$2 topo=${3:-}
  RW_TMP=$(mktemp -d /tmp/rackwise-slurm.XXXXXX)
  mkdir -p "$RW_TMP"/{state,spool,log,fakedev,etc}
  local g
  for g in 0 1 2 3 4 5 6 7; do ln -s /dev/null "$RW_TMP/fakedev/nvidia$g"; done
  rw_nodes_from_yaml "$yaml"
  local count=${#RW_NODES[@]}
  local base
  base=$(rw_pick_ports $((count + 1))) || return 1
  RW_CTLD_PORT=$base
  export SLURM_CONF=$RW_TMP/etc/slurm.conf
  cp "$yaml" "$RW_TMP/etc/rackwise.yaml"
  {
    echo "# Written by tests/integration/slurm/lib.sh"
    echo "ClusterName=rwtest"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=$RW_CTLD_PORT"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$RW_TMP/state"
    echo "SlurmdSpoolDir=$RW_TMP/spool/%n"
    echo "SlurmctldPidFile=$RW_TMP/slurmctld.pid"
    echo "SlurmdPidFile=$RW_TMP/spool/slurmd-%n.pid"
    echo "SlurmctldLogFile=$RW_TMP/log/slurmctld.log"
    echo "SlurmdLogFile=$RW_TMP/log/slurmd-%n.log"
    echo "SlurmctldDebug=${RW_CTLD_DEBUG:-info}"
    echo "SlurmdDebug=error"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "MpiDefault=none"
    [[ -z ${RW_SLURM_PREFIX:-} ]] && echo "SwitchType=switch/none"  # 23.11 dropped switch/none (no SwitchType)
    echo "JobCompType=jobcomp/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "ReturnToService=2"
    echo "MailProg=/bin/true"
    echo "SlurmdTimeout=30"
    echo "SlurmdParameters=config_overrides"
    echo "SchedulerParameters=bf_interval=1,sched_interval=2,bf_continue"
    echo "SelectType=$select"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    echo "PluginDir=${RW_PLUGIN_DIR}:$(rw_slurm_plugins_without_rackwise)"
    echo "PlugStackConfig=$RW_TMP/etc/plugstack.conf"
    if [[ -n ${RW_POWER_SAVE:-} ]]; then
      # Power saving that only acts when asked (scontrol update state=power_down): SuspendTime is longer than
      # any test. A node's "power" is its slurmd: suspend stops it, resume starts it (rw_power_scripts).
      echo "SuspendProgram=$RW_TMP/etc/suspend.sh"
      echo "ResumeProgram=$RW_TMP/etc/resume.sh"
      echo "SuspendTime=36000"
      echo "SuspendTimeout=5"
      echo "ResumeTimeout=60"
      echo "SlurmctldParameters=power_save_interval=1,power_save_min_interval=0"
    fi
    if [[ -n $topo ]]; then
      # RW_TOPOLOGY_PLUGIN: topology/tree (default) or, from Slurm 23.11, topology/block.
      echo "TopologyPlugin=${RW_TOPOLOGY_PLUGIN:-topology/tree}"
      [[ ${RW_TOPOLOGY_PLUGIN:-topology/tree} == topology/tree ]] && echo "TopologyParam=TopoOptional"
      cp "$topo" "$RW_TMP/etc/topology.conf"
    fi
    local i=0 n
    for n in "${RW_NODES[@]}"; do
      i=$((i + 1))
      echo "NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=16 RealMemory=4000 Gres=gpu:${RW_NODE_GPUS[$n]}"
    done
    local hgx nvl1 nvl2 all
    all=$(IFS=,; echo "${RW_NODES[*]}")
    echo "PartitionName=all Nodes=$all Default=YES MaxTime=INFINITE DefaultTime=60 State=UP OverSubscribe=NO"
    hgx=$(printf '%s\n' "${RW_NODES[@]}" | grep '^gpu' | paste -sd,)
    [[ -n $hgx ]] && echo "PartitionName=hgx Nodes=$hgx MaxTime=INFINITE DefaultTime=60 State=UP"
    local h02
    h02=$(printf '%s\n' "${RW_NODES[@]}" | grep -E '^gpu0[5-8]$' | paste -sd,)
    [[ -n $h02 ]] && echo "PartitionName=h02 Nodes=$h02 MaxTime=INFINITE DefaultTime=60 State=UP"
    nvl1=$(printf '%s\n' "${RW_NODES[@]}" | grep '^nvl' | paste -sd,)
    [[ -n $nvl1 ]] && echo "PartitionName=nvl Nodes=$nvl1 MaxTime=INFINITE DefaultTime=60 State=UP"
    [[ -n ${RW_EXTRA_CONF:-} ]] && echo "$RW_EXTRA_CONF"
  } >"$SLURM_CONF"
  {
    echo "AutoDetect=off"
    local n
    for n in "${RW_NODES[@]}"; do
      echo "NodeName=$n Name=gpu File=$RW_TMP/fakedev/nvidia[0-$((RW_NODE_GPUS[$n] - 1))]"
    done
  } >"$RW_TMP/etc/gres.conf"
  # Each node keeps the last rackwise.yaml it accepted in a cache of its own (several slurmd on one host).
  echo "${RW_SPANK:-optional} ${RW_PLUGIN_DIR}/spank_rackwise.so cache_dir=$RW_TMP/cache/%n" >"$RW_TMP/etc/plugstack.conf"
  [[ -n ${RW_POWER_SAVE:-} ]] && rw_power_scripts
  trap rw_teardown EXIT
  trap 'exit 1' INT TERM
}

# Debian's plugin directory as symlinks, less any rackwise plugin installed there (the Debian package puts them
# there): slurmctld loads every select_*.so in PluginDir and dies on a plugin_id seen twice.
rw_slurm_plugins_without_rackwise() {
  local dir=$RW_TMP/slurm-plugins f
  mkdir -p "$dir"
  for f in "$RW_SLURM_PLUGINS"/*; do
    [[ $(basename "$f") == *rackwise* ]] && continue
    ln -sfn "$f" "$dir/"
  done
  echo "$dir"
}

# SuspendProgram and ResumeProgram for RW_POWER_SAVE (slurmctld runs them with a hostlist). A resumed slurmd is
# not our child: its PID goes to extra.pids, which rw_cleanup reads.
rw_power_scripts() {
  local conf=$SLURM_CONF tmp=$RW_TMP
  # slurmctld runs them with almost no environment: absolute paths, and a log of what they did.
  printf '%s\n' '#!/bin/sh' "export SLURM_CONF=$conf" \
    "for n in \$($RW_BIN/scontrol show hostnames \"\$1\"); do" \
    "  echo \"\$(/bin/date -u +%T) suspend \$n\" >>\"$tmp/log/power.log\"" \
    '  /usr/bin/pkill -TERM -f "slurmd -D -N $n -f $SLURM_CONF"' \
    'done' 'exit 0' >"$tmp/etc/suspend.sh"
  printf '%s\n' '#!/bin/sh' "export SLURM_CONF=$conf" \
    "for n in \$($RW_BIN/scontrol show hostnames \"\$1\"); do" \
    "  echo \"\$(/bin/date -u +%T) resume \$n\" >>\"$tmp/log/power.log\"" \
    "  /bin/mkdir -p \"$tmp/spool/\$n\"" \
    "  $RW_SBIN/slurmd -D -N \"\$n\" -f \"$conf\" >>\"$tmp/log/slurmd.out\" 2>&1 &" \
    "  echo \$! >>\"$tmp/extra.pids\"" \
    'done' 'exit 0' >"$tmp/etc/resume.sh"
  chmod 755 "$tmp/etc/suspend.sh" "$tmp/etc/resume.sh"
}

# Prints the end of the daemons' logs (after a daemon died or a wait stalled).
rw_dump_logs() {
  local f
  for f in "$RW_TMP/log/slurmctld.out" "$RW_TMP/log/slurmctld.log" "$RW_TMP/log/slurmd.out"; do
    [[ -s $f ]] || continue
    rw_log "--- last lines of $f:"
    tail -n 25 "$f" >&2
  done
}

# Exits the test at once (status 1, logs printed) when a daemon it depends on has died: without a controller
# every client call would wait for its timeouts and the test would hang instead of failing.
rw_die() {
  rw_fail "$*"
  rw_dump_logs
  # Inside $(...) an exit would only end the subshell: stop the test itself (its TERM trap exits 1).
  [[ $BASHPID != "$$" ]] && kill -TERM "$$"
  exit 1
}
rw_check_ctld() {
  [[ -z $RW_CTLD_PID ]] || kill -0 "$RW_CTLD_PID" 2>/dev/null || rw_die "slurmctld (pid $RW_CTLD_PID) has died"
}

# Starts slurmctld and waits until it answers. Returns 1 (with its log) if it exits instead.
rw_start_ctld() {
  # Through .../sbin/slurmctld: running_in_slurmctld() compares the program name.
  "$RW_SBIN/slurmctld" -D -i -f "$SLURM_CONF" >>"$RW_TMP/log/slurmctld.out" 2>&1 &
  RW_CTLD_PID=$!
  RW_PIDS+=("$RW_CTLD_PID")
  local t
  for ((t = 0; t < 900; t++)); do  # a safety net only: it answers in seconds, or exits
    if ! kill -0 "$RW_CTLD_PID" 2>/dev/null; then
      rw_log "slurmctld exited while starting:"
      rw_dump_logs
      RW_CTLD_PID=""
      return 1
    fi
    scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
    sleep 0.2
  done
  rw_log "slurmctld did not answer in 180 s"
  rw_dump_logs
  return 1
}

rw_stop_ctld() {
  [[ -n $RW_CTLD_PID ]] || return 0
  kill -TERM "$RW_CTLD_PID" 2>/dev/null
  local t
  for ((t = 0; t < 100; t++)); do kill -0 "$RW_CTLD_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$RW_CTLD_PID" 2>/dev/null
  wait "$RW_CTLD_PID" 2>/dev/null
  RW_CTLD_PID=""
}

# Starts slurmctld and every slurmd; waits until every node has registered and is idle. Waits on progress,
# not on a fixed time: it fails when a daemon dies or when no further node registers for RW_REGISTER_STALL
# seconds (default 120; registration of 44 slurmd on a loaded 2-core machine can take a minute).
rw_start() {
  rw_start_ctld || { rw_log "slurmctld did not come up"; return 1; }
  local n
  declare -gA RW_SLURMD_PID=()
  for n in "${RW_NODES[@]}"; do
    mkdir -p "$RW_TMP/spool/$n"
    "$RW_SBIN/slurmd" -D -N "$n" -f "$SLURM_CONF" >>"$RW_TMP/log/slurmd.out" 2>&1 &
    RW_PIDS+=("$!")
    RW_SLURMD_PID[$n]=$!
  done
  local idle=-1 last=-1 since=$SECONDS stall=${RW_REGISTER_STALL:-120}
  while :; do
    rw_check_ctld
    for n in "${RW_NODES[@]}"; do
      if ! kill -0 "${RW_SLURMD_PID[$n]}" 2>/dev/null; then
        rw_log "--- last lines of $RW_TMP/log/slurmd-$n.log:"
        tail -n 15 "$RW_TMP/log/slurmd-$n.log" >&2 2>/dev/null
        rw_die "slurmd of $n (pid ${RW_SLURMD_PID[$n]}) has died"
      fi
    done
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2=="idle"' | sort -u | wc -l)
    [[ $idle -eq ${#RW_NODES[@]} ]] && { rw_log "all ${#RW_NODES[@]} slurmd registered"; return 0; }
    if [[ $idle -ne $last ]]; then last=$idle since=$SECONDS; fi
    if ((SECONDS - since > stall)); then
      rw_log "only $idle of ${#RW_NODES[@]} nodes idle, none registered for ${stall} s:"
      sinfo -N -o '%N %t %E' >&2
      rw_dump_logs
      return 1
    fi
    sleep 0.5
  done
}

# Every process below `pid`, depth first.
rw_descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    rw_descendants "$c"
  done
}

# Stops the cluster (jobs, daemons, leftover slurmstepd) and removes the temp dir; the shell goes on.
rw_cleanup() {
  [[ -z $RW_TMP ]] && return 0
  if [[ -n $RW_CTLD_PID ]] && kill -0 "$RW_CTLD_PID" 2>/dev/null; then
    scancel --quiet --user=root 2>/dev/null
    local t
    for ((t = 0; t < 50; t++)); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  # Collect what our daemons started (slurmstepd and the jobs), then stop everything by PID.
  local p kids=()
  [[ -f $RW_TMP/extra.pids ]] && RW_PIDS+=($(cat "$RW_TMP/extra.pids"))
  for p in "${RW_PIDS[@]}"; do kids+=($(rw_descendants "$p")); done
  for p in "${RW_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  local t alive
  for ((t = 0; t < 50; t++)); do
    alive=0
    for p in "${RW_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  # slurmstepd can outlive its slurmd and ignore SIGTERM.
  for p in "${RW_PIDS[@]}" "${kids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if ((RW_FAILS != 0)) && [[ -f $RW_TMP/log/slurmctld.log ]]; then
    rw_log "rackwise/error lines of slurmctld.log:"
    grep -i 'rackwise\|error\|fatal' "$RW_TMP/log/slurmctld.log" | grep -v 'mpi\|MPI\|state file' | tail -25 >&2
  fi
  if [[ -n ${RW_KEEP:-} ]]; then rw_log "kept $RW_TMP"; else rm -rf "$RW_TMP"; fi
  RW_TMP="" RW_PIDS=() RW_CTLD_PID=""
}

# EXIT trap: always stop the daemons.
rw_teardown() {
  local rc=$?
  trap - EXIT
  rw_cleanup
  exit "$rc"
}

# --- jobs -------------------------------------------------------------------------------------------

# rw_submit ARGS...: sbatch a sleeper; prints the job id (empty on rejection, the error on stderr).
# Accepted ids are kept in $RW_TMP/accepted.ids (see rw_check_never).
rw_submit() {
  local id
  id=$(sbatch --parsable -o /dev/null -e /dev/null -D "$RW_TMP" "$@" --wrap 'sleep 3000' 2>"$RW_TMP/sbatch.err" | cut -d';' -f1)
  [[ -n $id ]] && echo "$id" >>"$RW_TMP/accepted.ids"
  echo "$id"
}

# "Never" must mean never: no job that slurmctld accepted may have been logged as one that can never run.
rw_check_never() {
  local ids bad=""
  ids=$(grep -o 'rackwise: JobId=[0-9]* can never run here' "$RW_TMP/log/slurmctld.log" | grep -o '[0-9]*' | sort -u)
  for id in $ids; do grep -qx "$id" "$RW_TMP/accepted.ids" 2>/dev/null && bad+=" $id"; done
  [[ -z $bad ]] && rw_ok "no accepted job was logged as one that can never run" ||
    rw_fail "accepted jobs logged as never runnable:$bad"
}

rw_state() { rw_check_ctld; squeue -h -j "$1" -o %T 2>/dev/null; }
rw_reason() { rw_check_ctld; squeue -h -j "$1" -o %r 2>/dev/null; }

# rw_wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds (0), or 1 once SECONDS have passed.
# Every poll first checks the daemons: slurmctld, and whatever the test's own rw_check_test_daemons checks when
# it defines one, so that a daemon that dies fails the test at once with its log rather than at a timeout.
rw_wait_for() {
  local limit=$1 t
  shift
  for ((t = 0; t < limit * 5; t++)); do
    rw_check_ctld
    if declare -F rw_check_test_daemons >/dev/null; then rw_check_test_daemons; fi
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

rw_state_is() { [[ $(rw_state "$1") == "$2" ]]; }
# rw_started ID: the job has started: it runs, or has run (a short job may be over before a busy test looks;
# slurmctld keeps it for MinJobAge).
rw_started() {
  rw_check_ctld
  [[ $(scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*') =~ ^JobState=(RUNNING|COMPLETING|COMPLETED)$ ]]
}
rw_log_count_at_least() { (($(grep -c -- "$1" "$RW_TMP/log/slurmctld.log" 2>/dev/null) >= $2)); }
rw_reason_matches() { rw_reason "$1" | grep -q -- "$2"; }

# rw_wait_state ID STATE SECONDS
rw_wait_state() { rw_wait_for "$3" rw_state_is "$1" "$2"; }

# rw_wait_log REGEX SECONDS [N]: waits until slurmctld.log has at least N (default 1) lines matching REGEX.
rw_wait_log() { rw_wait_for "$2" rw_log_count_at_least "$1" "${3:-1}"; }

# rw_wait_reason ID REGEX SECONDS: waits until the job's pending reason (squeue -o %r) matches REGEX.
rw_wait_reason() { rw_wait_for "$3" rw_reason_matches "$1" "$2"; }

# rw_backfill_cycles: how many cycles the backfill scheduler has run (sdiag's "Backfilling stats").
rw_backfill_cycles() { sdiag 2>/dev/null | awk '/^Backfilling stats/ {b = 1} b && /Total cycles:/ {print $3; exit}'; }

# rw_wait_backfill N SECONDS: waits until the backfill scheduler has completed N more cycles, so that every
# pending job has been considered by it (a test that asserts a job is NOT started waits on this, not on a sleep).
rw_wait_backfill() {
  local want=$1 limit=$2 start
  start=$(rw_backfill_cycles)
  [[ -n $start ]] || { rw_log "sdiag shows no backfill cycles"; return 1; }
  rw_wait_for "$limit" rw_backfill_cycles_at_least $((start + want))
}
rw_backfill_cycles_at_least() { local now; now=$(rw_backfill_cycles); ((${now:-0} >= $1)); }

# Nodes of a job, one per line.
rw_job_nodes() { scontrol show hostnames "$(squeue -h -j "$1" -o %N)" 2>/dev/null; }

# "node idx,idx,..." per node, from `scontrol show job -d`.
rw_job_gpus() {
  scontrol show job -d "$1" | grep -o 'Nodes=[^ ]* CPU_IDs=[^ ]* Mem=[^ ]* GRES=[^ ]*' | while read -r nodes _ _ gres; do
    local idx=${gres#*IDX:}
    idx=${idx%)}
    local expanded="" part
    IFS=, read -ra parts <<<"$idx"
    for part in "${parts[@]}"; do
      if [[ $part == *-* ]]; then expanded+="$(seq -s, "${part%-*}" "${part#*-}"),"; else expanded+="$part,"; fi
    done
    local n
    for n in $(scontrol show hostnames "${nodes#Nodes=}"); do echo "$n ${expanded%,}"; done
  done
}

# Distinct values of a node attribute (rack or NVLink domain) over a job's nodes.
rw_rack_of() {
  case $1 in
    gpu0[1-4]) echo h01 ;;
    gpu0[5-8]) echo h02 ;;
    nvl01-*) echo nvl01 ;;
    nvl02-*) echo nvl02 ;;
    *) echo "?" ;;
  esac
}
# The nodes of a rack of cluster.yaml (the inverse of rw_rack_of).
rw_rack_nodes() {
  case $1 in
    h01) echo gpu01 gpu02 gpu03 gpu04 ;;
    h02) echo gpu05 gpu06 gpu07 gpu08 ;;
    nvl01 | nvl02) printf "$1-t%02d " $(seq 1 18) ;;
  esac
}
rw_domain_of() { case $1 in nvl*) rw_rack_of "$1" ;; *) echo "$1" ;; esac; }

rw_job_racks() { local n; for n in $(rw_job_nodes "$1"); do rw_rack_of "$n"; done | sort -u; }
rw_job_domains() { local n; for n in $(rw_job_nodes "$1"); do rw_domain_of "$n"; done | sort -u; }

# The shared ledger's callers (rackwise-ledger --access-file). rw_ledger_identities NAME=PREFIX[,PREFIX...] ...:
# a bearer token per identity in $RW_TMP/etc/NAME.token (openssl rand) and the access file
# $RW_TMP/etc/ledger-access.yaml giving each identity the owner prefixes it may write (NAME= : reads only).
rw_ledger_identities() {
  local spec name out=$RW_TMP/etc/ledger-access.yaml
  echo "identities:" >"$out"
  for spec in "$@"; do
    name=${spec%%=*}
    openssl rand -hex 32 >"$RW_TMP/etc/$name.token" || return 1
    printf '  - name: %s\n    write: [%s]\n    token_file: %s\n' "$name" "${spec#*=}" "$RW_TMP/etc/$name.token" >>"$out"
  done
}
# rw_ledger_token YAML NAME: the description's ledger: section presents identity NAME's token.
rw_ledger_token() { sed -i "/^ledger:/a\\  token_file: $RW_TMP/etc/$2.token" "$1"; }

# rw_start_sampler DESCRIPTION: starts live_checker.py's independent sampler of what runs (caps less the reserve,
# GPUs held once) in the background. Tests append "id gpus per_node watts locality partition_nodes" lines to
# $RW_JOBS_FILE as they submit; the samples go to $RW_SAMPLES; touching $RW_SAMPLER_STOP ends it ($RW_SAMPLER).
rw_start_sampler() {
  RW_JOBS_FILE=$RW_TMP/jobs.txt RW_SAMPLES=$RW_TMP/samples.txt RW_SAMPLER_STOP=$RW_TMP/sampler.stop
  : >"$RW_JOBS_FILE"
  /usr/bin/python3 "$RW_LIB_DIR/live_checker.py" sample "$1" "$RW_JOBS_FILE" "$RW_SAMPLES" "$RW_SAMPLER_STOP" \
    2>>"$RW_TMP/log/sampler.err" &
  RW_SAMPLER=$!
  RW_PIDS+=("$RW_SAMPLER")
}
rw_samples_taken() { grep -c '^sample ' "$RW_SAMPLES" 2>/dev/null; }
rw_samples_at_least() {
  kill -0 "$RW_SAMPLER" 2>/dev/null || rw_die "the sampler died: $(tail -5 "$RW_TMP/log/sampler.err")"
  (($(rw_samples_taken) >= $1))
}
# rw_wait_samples N: waits until the sampler has taken N more samples, so that it has seen what runs now; fails
# the test at once if the sampler died, and when it takes none for 60 s.
rw_wait_samples() {
  rw_wait_for 60 rw_samples_at_least $(($(rw_samples_taken) + $1)) || rw_fail "the sampler took no sample in 60 s"
}

# --- etcd, for the shared ledger ----------------------------------------------------------------------------------
# rw_start_etcd CLIENT_URL PEER_PORT LOG: a single-member etcd on loopback, its data under $RW_TMP/etcd and its
# output in LOG. Sets RW_ETCD_PID (the test stops it) and waits until it answers /health; 1 (log printed) when it
# does not.
rw_start_etcd() {
  local url=$1 peer=http://127.0.0.1:$2 log=$3
  /usr/bin/etcd --name default --data-dir "$RW_TMP/etcd" --listen-client-urls "$url" --advertise-client-urls "$url" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "default=$peer" >"$log" 2>&1 &
  RW_ETCD_PID=$!
  rw_wait_for 30 curl -sf "$url/health" -o /dev/null && return 0
  rw_fail "etcd did not start"
  tail "$log" >&2
  return 1
}

# rw_enforce_limits YAML [DIR]: appends power enforcement to YAML with each node's NVML stand-in and state
# directory under DIR/NODE (default $RW_TMP/nvml; %n is the node's name; the test puts the library there).
rw_enforce_limits() {
  local dir=${2:-$RW_TMP/nvml}
  cat >>"$1" <<YAML
power_enforcement:
  mode: enforce
  nvml_library: $dir/%n/libnvidia-ml.so.1
  state_dir: $dir/%n
YAML
}

# --- measured power: a DCGM exporter's page and the real Prometheus scraping it ---------------------------------
# rw_serve_page WORK PAGE_PORT: serves WORK/dcgm.prom (the page the test writes) on PAGE_PORT with RW_METRICS_PAGE
# (its log in WORK/page.log); sets RW_PAGE_PID.
rw_serve_page() {
  "$RW_METRICS_PAGE" "$2" "$1/dcgm.prom" 2>"$1/page.log" &
  RW_PAGE_PID=$!
}
# rw_start_prometheus WORK PAGE_PORT PROM_PORT: serves the page (rw_serve_page) and starts the real Prometheus on
# PROM_PORT scraping it every second (logs in WORK). Sets RW_PAGE_PID and RW_PROM_PID before it waits (the test
# stops them). Waits until Prometheus has the target up; 1 (logs printed) when it does not come up.
rw_start_prometheus() {
  local work=$1 page_port=$2 prom_port=$3
  rw_serve_page "$work" "$page_port"
  cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: dcgm
    static_configs: [{targets: ['127.0.0.1:$page_port']}]
YML
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
  RW_PROM_PID=$!
  RW_PROM_PORT=$prom_port
  if ! rw_wait_for 60 rw_prom_target_up; then
    rw_fail "prometheus target not up: $(curl -s "http://127.0.0.1:$prom_port/api/v1/targets" | head -c 800)"
    cat "$work/prometheus.log" "$work/page.log" >&2
    return 1
  fi
}
# rw_add_telemetry YAML INTERVAL_S STALE_AFTER_S ON_OVERDRAW: appends measured power from the Prometheus that
# rw_start_prometheus started (DCGM's GPU power summed by node) to YAML.
rw_add_telemetry() {
  cat >>"$1" <<YAML
telemetry:
  prometheus_url: http://127.0.0.1:$RW_PROM_PORT
  node_power_query: sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)
  node_label: Hostname
  interval_s: $2
  stale_after_s: $3
  on_overdraw: $4
YAML
}
rw_prom_target_up() { [[ $(rw_prom_query 'up{job="dcgm"}') == 1 ]]; }
# rw_prom_query PROMQL: the first value of an instant query (empty when the vector is empty).
rw_prom_query() {
  curl -s --max-time 2 "http://127.0.0.1:$RW_PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    sed -n 's/.*"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p'
}
