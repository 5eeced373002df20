#!/usr/bin/env bash
# select/rackwise_cons_tres in a real slurmctld with 44 real slurmd on 127.0.0.1 (cluster.yaml: two HGX
# racks, one with a tight cap, and two GB200 NVL72 racks): placements read back from `scontrol show job -d`,
# a rack cap holding jobs (with the reason in squeue -o %r) across a slurmctld restart, reconfigure with a bad
# file and with a lowered cap, nodes going down, oversized jobs, and a refused start on a mismatched file.
# Usage: RW_PLUGIN_DIR=<build>/slurm_plugin/plugins test_placement.sh   (exit 77: skipped, see lib.sh)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rw_require
rw_setup select/rackwise_cons_tres "$here/cluster.yaml"
rw_start || exit 1
yaml=$RW_TMP/etc/rackwise.yaml
cp "$yaml" "$RW_TMP/rackwise.yaml.good"

gpus_in_rack() {  # GPUs held by running jobs in a rack
  local rack=$1 total=0 id n idx
  for id in $(squeue -h -t R -o %i); do
    while read -r n idx; do
      [[ $(rw_rack_of "$n") == "$rack" ]] && total=$((total + $(tr ',' '\n' <<<"$idx" | grep -c .)))
    done < <(rw_job_gpus "$id")
  done
  echo "$total"
}
# Racks whose draw (idle + running jobs' GPUs, the description's power model) is above cap x (1 - reserve).
racks_over_usable() {
  local reserve=$1 rack gpus draw cap
  declare -A cap_w=([h01]=$(awk '/name: h01/{f=1} f&&/power_cap_kw/{print $2*1000; exit}' "$yaml")
                    [h02]=$(awk '/name: h02/{f=1} f&&/power_cap_kw/{print $2*1000; exit}' "$yaml")
                    [nvl01]=132000 [nvl02]=132000)
  for rack in h01 h02 nvl01 nvl02; do
    gpus=$(gpus_in_rack "$rack")
    case $rack in h0*) draw=$(awk -v g="$gpus" 'BEGIN{print 10000 + g * 962.5}') ;;
                  *) draw=$(awk -v g="$gpus" 'BEGIN{print 27000 + g * 1275}') ;; esac
    cap=${cap_w[$rack]}
    awk -v d="$draw" -v c="$cap" -v r="$reserve" 'BEGIN{exit !(d > c * (1 - r / 100))}' &&
      echo "$rack ${draw} W > $(awk -v c="$cap" -v r="$reserve" 'BEGIN{print c * (1 - r / 100)}') W"
  done
}
# scontrol reconfigure, then wait until slurmctld has loaded the (good) rackwise.yaml once more.
reconfigure_and_wait() {
  local before
  before=$(grep -c 'rackwise: loaded .*rackwise.yaml' "$RW_TMP/log/slurmctld.log")
  scontrol reconfigure
  rw_wait_log 'rackwise: loaded .*rackwise.yaml' 30 $((before + 1)) || rw_fail "rackwise.yaml not reloaded"
}
# Cancels every job and waits until the queue is empty: running jobs pass through COMPLETING until their slurmd
# reports the end; on a loaded machine that took over 20 s once (CI, right after a reconfigure), hence 60 s.
cancel_all() {
  scancel --user=root 2>/dev/null
  local t
  for ((t = 0; t < 300; t++)); do [[ -z $(squeue -h) ]] && return 0; sleep 0.2; done
  rw_fail "queue did not drain in 60 s: $(squeue -h -o '%i %T %r %N' | paste -sd';')"
  tail -15 "$RW_TMP/log/slurmctld.log" >&2
}

# --- Slurm's own tools work with the plugin installed -----------------------------------------------
[[ $(scontrol show config | awk '/^SelectType /{print $3}') == select/rackwise_cons_tres ]] &&
  rw_ok "SelectType is select/rackwise_cons_tres" || rw_fail "SelectType not ours"
[[ $(sinfo -h -N -o '%N' | sort -u | wc -l) -eq 44 ]] && rw_ok "sinfo lists 44 nodes" || rw_fail "sinfo"
squeue >/dev/null && scontrol show nodes gpu01 | grep -q 'Gres=gpu:8' && rw_ok "squeue/scontrol work" ||
  rw_fail "squeue/scontrol"
grep -q 'rackwise: loaded .*44 nodes' "$RW_TMP/log/slurmctld.log" && rw_ok "rackwise.yaml loaded beside slurm.conf" ||
  rw_fail "no load message"

# --- Jobs that can never run are refused at submit; bad options are refused by the SPANK plugin -------
id=$(rw_submit --gpus=1000)
[[ -z $id ]] && rw_ok "1000 GPUs refused at submit ($(head -c 120 "$RW_TMP/sbatch.err"))" || rw_fail "1000-GPU job accepted ($id)"
id=$(rw_submit -p hgx --gpus=72 --nvlink=required)
[[ -z $id ]] && rw_ok "72 GPUs with --nvlink=required on 8-GPU nodes refused" || rw_fail "unplaceable required job accepted ($id)"
id=$(rw_submit --gpus=8 --nvlink=sometimes)
if [[ -z $id ]] && grep -q -- '--nvlink' "$RW_TMP/sbatch.err"; then rw_ok "--nvlink=sometimes refused by the SPANK plugin"
else rw_fail "bad --nvlink accepted ($id): $(cat "$RW_TMP/sbatch.err")"; fi
id=$(rw_submit --gpus=8 --gpu-watts=-3)
[[ -z $id ]] && rw_ok "--gpu-watts=-3 refused" || rw_fail "bad --gpu-watts accepted"
scontrol ping | grep -q UP && rw_ok "slurmctld alive after refused jobs" || rw_fail "slurmctld died"

# --- NVL72: 64 GPUs land in one rack; a second one in the other; a small job fills a fragment -----------
a=$(rw_submit -p nvl --gpus=64 --nvlink=required)
rw_wait_state "$a" RUNNING 20 || rw_fail "64-GPU job $a not running: $(rw_reason "$a")"
ra=$(rw_job_racks "$a")
[[ $(wc -l <<<"$ra") -eq 1 && $(rw_job_nodes "$a" | wc -l) -eq 16 ]] &&
  rw_ok "64 GPUs in one NVL72 rack ($ra, 16 trays)" || rw_fail "64-GPU job spread: $(rw_job_nodes "$a" | paste -sd' ')"
b=$(rw_submit -p nvl --gpus=64)
rw_wait_state "$b" RUNNING 20 || rw_fail "second 64-GPU job $b not running: $(rw_reason "$b")"
rb=$(rw_job_racks "$b")
[[ $(wc -l <<<"$rb") -eq 1 && $rb != "$ra" ]] && rw_ok "second 64 GPUs in the other rack ($rb)" ||
  rw_fail "second 64-GPU job: racks $(paste -sd' ' <<<"$rb")"
c=$(rw_submit -p nvl --gpus=8 --nvlink=none)
rw_wait_state "$c" RUNNING 20 || rw_fail "8-GPU job $c not running"
[[ $(rw_job_racks "$c" | wc -l) -eq 1 ]] && rw_ok "8-GPU job in one rack ($(rw_job_racks "$c"))" || rw_fail "8-GPU job spread"
# 72 GPUs free, but in no single rack: --nvlink=required waits, --nvlink=preferred starts across two racks.
scancel "$a"
for ((t = 0; t < 50; t++)); do [[ -z $(rw_state "$a") ]] && break; sleep 0.2; done
r=$(rw_submit -p nvl --gpus=72 --nvlink=required)
if rw_wait_reason "$r" 'rackwise:' 20 && [[ $(rw_state "$r") == PENDING ]]; then
  rw_ok "--nvlink=required waits for a whole NVL72 rack: $(rw_reason "$r")"
else
  rw_fail "required 72-GPU job: $(rw_state "$r") on $(rw_job_racks "$r" | paste -sd,)"
fi
scancel "$r"
p=$(rw_submit -p nvl --gpus=72 --nvlink=preferred)
rw_wait_state "$p" RUNNING 20 || rw_fail "preferred 72-GPU job not running: $(rw_reason "$p")"
[[ $(rw_job_racks "$p" | wc -l) -eq 2 ]] && rw_ok "--nvlink=preferred starts across 2 racks instead of waiting" ||
  rw_fail "preferred 72-GPU job racks: $(rw_job_racks "$p" | paste -sd,)"
cancel_all

# A --nvlink=preferred job that only the backfill scheduler could start (the job ahead of it waits) takes only
# its fewest domains. 32 GPUs free in each NVL72 rack; the 72-GPU head waits for a rack; `q` (48 GPUs, 5-minute
# limit, so it would end before the head's expected start) fits the free GPUs only across both racks: backfill
# may not start it spread out. Once the head runs and a rack empties, `q` starts in one rack.
a=$(rw_submit -p nvl --gpus=40 --nvlink=required)
b=$(rw_submit -p nvl --gpus=40 --nvlink=required)
{ rw_wait_state "$a" RUNNING 20 && rw_wait_state "$b" RUNNING 20; } || rw_fail "two 40-GPU jobs not running"
[[ $(rw_job_racks "$a") != "$(rw_job_racks "$b")" ]] || rw_fail "the two 40-GPU jobs share a rack"
h=$(rw_submit -p nvl --gpus=72 --nvlink=required)
rw_wait_reason "$h" 'Resources\|Priority\|rackwise' 20 || rw_fail "72-GPU head never considered: $(rw_reason "$h")"
q=$(rw_submit -p nvl -t 5 --gpus=48 --nvlink=preferred)
# Two whole backfill cycles after q arrived: backfill has had its chance to start q.
rw_wait_backfill 2 30 || rw_fail "backfill did not cycle"
if [[ $(rw_state "$q") == PENDING && $(rw_state "$h") == PENDING ]]; then
  rw_ok "backfill does not start a --nvlink=preferred job spread out ahead of its turn: $(rw_reason "$q")"
else
  rw_fail "preferred job behind a waiting head: $(rw_state "$q") on $(rw_job_racks "$q" | paste -sd,)" \
    "(head $(rw_state "$h"))"
fi
scancel "$a"
rw_wait_state "$h" RUNNING 20 || rw_fail "72-GPU head not running after a rack emptied: $(rw_reason "$h")"
scancel "$b"
if rw_wait_state "$q" RUNNING 20; then
  [[ $(rw_job_racks "$q" | wc -l) -eq 1 ]] && rw_ok "then it starts in one rack ($(rw_job_racks "$q"))" ||
    rw_fail "preferred job racks: $(rw_job_racks "$q" | paste -sd,)"
else
  rw_fail "preferred job not running once a rack emptied: $(rw_reason "$q")"
fi
cancel_all

# In the partition of both types, a --nvlink=preferred job that only backfill could start, whose NVL72 rack is
# far off (the racks' jobs have an hour left; it asks 5 minutes, so waiting would cost it more than the default
# 20% of its limit), takes HGX nodes, where it can never be whole, and no pieces of the NVL72 racks the head
# waits for: 16 GPUs at 4 per node on 4 HGX nodes, while 8 GPUs are free in each NVL72 rack.
a=$(rw_submit -p nvl --gpus=64 --nvlink=required)
b=$(rw_submit -p nvl --gpus=64 --nvlink=required)
{ rw_wait_state "$a" RUNNING 20 && rw_wait_state "$b" RUNNING 20; } || rw_fail "two 64-GPU NVL72 jobs not running"
h=$(rw_submit --gpus=72 --nvlink=required)
rw_wait_reason "$h" 'Resources\|Priority\|rackwise' 20 || rw_fail "72-GPU head never considered: $(rw_reason "$h")"
q=$(rw_submit -t 5 -N 4 --gpus-per-node=4 --nvlink=preferred)
if rw_wait_state "$q" RUNNING 30; then
  qn=$(rw_job_nodes "$q")
  if [[ $(grep -c '^gpu' <<<"$qn") -eq 4 && $(wc -l <<<"$qn") -eq 4 ]]; then
    rw_ok "backfill starts a far-off --nvlink=preferred job on HGX nodes, not on NVL72 pieces ($(paste -sd, <<<"$qn"))"
  else
    rw_fail "backfilled preferred job on $(paste -sd, <<<"$qn")"
  fi
else
  rw_fail "preferred job with a far-off NVL72 rack not started on free HGX nodes: $(rw_reason "$q")"
fi
[[ $(rw_state "$h") == PENDING ]] || rw_fail "72-GPU head $(rw_state "$h") with no whole rack free"
cancel_all

# --- HGX: the fewest nodes; rail alignment on partly used nodes ----------------------------------------
d=$(rw_submit -p hgx --gpus=16)
rw_wait_state "$d" RUNNING 20 || rw_fail "16-GPU HGX job not running"
[[ $(rw_job_nodes "$d" | wc -l) -eq 2 ]] && rw_ok "16 GPUs on 2 HGX nodes" || rw_fail "16 GPUs on $(rw_job_nodes "$d" | wc -l) nodes"
e=$(rw_submit -p hgx --gpus=12)
rw_wait_state "$e" RUNNING 20 || rw_fail "12-GPU job not running"
[[ $(rw_job_nodes "$e" | wc -l) -eq 2 ]] && rw_ok "12 GPUs on 2 HGX nodes" || rw_fail "12 GPUs on $(rw_job_nodes "$e" | wc -l) nodes"
cancel_all
f=$(rw_submit -p hgx -w gpu01 --gpus=4)
rw_wait_state "$f" RUNNING 20 || rw_fail "4-GPU job on gpu01 not running"
g=$(rw_submit -p hgx -w gpu01,gpu02 -N 2 --gpus-per-node=4)
rw_wait_state "$g" RUNNING 20 || rw_fail "2x4 job not running: $(rw_reason "$g")"
idx=$(rw_job_gpus "$g" | awk '{print $2}' | sort -u)
if [[ $(wc -l <<<"$idx") -eq 1 ]]; then rw_ok "2 nodes x 4 GPUs rail-aligned (IDX $idx on both, gpu01 half used)"
else rw_fail "not rail-aligned: $(rw_job_gpus "$g" | paste -sd' ')"; fi
cancel_all

# --- --gpu-watts reaches slurmctld: 32 GPUs fit h02's 30 kW at 300 W each, not at the default 962.5 W --------
w=$(rw_submit -p h02 --gpus=32 --gpu-watts=300)
rw_wait_state "$w" RUNNING 20 && rw_ok "--gpu-watts=300 lets 32 GPUs run under h02's 30 kW cap" ||
  rw_fail "32 GPUs at 300 W: $(rw_state "$w") '$(rw_reason "$w")' $(cat "$RW_TMP/sbatch.err")"
cancel_all
w=$(rw_submit -p h02 --gpus=32)
[[ -z $w ]] && rw_ok "the same 32 GPUs at the default draw are refused at submit (never fit the cap)" ||
  rw_fail "32 GPUs at the default draw accepted ($w)"

# --- A rack cap holds jobs back, with the reason shown, and releases them when power frees ---------------
# h02: cap 30 kW, idle 10 kW, 962.5 W per GPU: at most 20 GPUs. p1 takes all of that power.
p1=$(rw_submit -p h02 --gpus=20)
rw_wait_state "$p1" RUNNING 20 || rw_fail "p1 not running"
p2=$(rw_submit -p h02 --gpus=8)
if rw_wait_reason "$p2" 'rackwise:.*rack h02 would need 7.7 kW' 20 && [[ $(rw_state "$p2") == PENDING ]]; then
  rw_ok "job over h02's cap waits with 12 GPUs free: $(rw_reason "$p2")"
else
  rw_fail "p2 state $(rw_state "$p2") reason '$(rw_reason "$p2")'"
fi
scontrol show job "$p2" | grep -q 'Reason=rackwise' && rw_ok "scontrol show job gives the reason" || rw_fail "no reason in scontrol"
[[ $(gpus_in_rack h02) -le 20 ]] && rw_ok "h02 holds $(gpus_in_rack h02) GPUs (<= 20)" || rw_fail "h02 over cap"
scancel "$p1"
rw_wait_state "$p2" RUNNING 20 && rw_ok "waiting job started when power freed" || rw_fail "p2 did not start: $(rw_reason "$p2")"

# --- Caps hold across a slurmctld restart with jobs running ---------------------------------------------
p3=$(rw_submit -p h02 --gpus=16)
rw_wait_reason "$p3" 'rackwise:' 20
[[ $(rw_state "$p3") == PENDING ]] || rw_fail "p3 should wait before the restart ($(rw_state "$p3"))"
rw_stop_ctld
rw_start_ctld || rw_fail "slurmctld did not restart"
[[ $(rw_state "$p2") == RUNNING ]] && rw_ok "running job survived the restart" || rw_fail "p2 is $(rw_state "$p2") after restart"
if rw_wait_reason "$p3" 'rackwise:' 20 && [[ $(rw_state "$p3") == PENDING ]]; then
  rw_ok "after restart the ledger still holds p3 back: $(rw_reason "$p3")"
else
  rw_fail "p3 after restart: $(rw_state "$p3") '$(rw_reason "$p3")'"
fi
[[ $(gpus_in_rack h02) -le 20 ]] && rw_ok "h02 within cap after restart" || rw_fail "h02 over cap after restart"

# --- Reconfigure: a bad file keeps the old one in force (placement goes on); a lowered cap applies at once ----
printf 'cluster: broken\nracks: [\n' >"$yaml"
scontrol reconfigure
rw_wait_log 'rackwise: rejected the cluster description.*rackwise.yaml:[0-9]' 30 &&
  rw_ok "bad file rejected with FILE:LINE: $(grep -o 'rackwise: rejected the cluster description.\{0,90\}' "$RW_TMP/log/slurmctld.log" | tail -1)" ||
  rw_fail "no rejection with FILE:LINE in the log"
scontrol ping | grep -q UP && rw_ok "slurmctld survives a bad rackwise.yaml at reconfigure" || rw_fail "slurmctld died on bad yaml"
# A GPU job submitted while the bad file is in place starts (the previous description is in force, not a hold).
k=$(rw_submit -p hgx -w gpu01 --gpus=4)
rw_wait_state "$k" RUNNING 30 && rw_ok "a job submitted under the bad file starts" ||
  rw_fail "job under the bad file: $(rw_state "$k") '$(rw_reason "$k")'"
[[ $(rw_state "$p3") == PENDING ]] && rw_ok "caps still enforced with the previous description" || rw_fail "p3 ran under a bad file"
# A restart with the bad file still there: the last accepted description (StateSaveLocation) is used.
rw_stop_ctld
rw_start_ctld && rw_ok "slurmctld restarts with a bad rackwise.yaml (last accepted one kept)" ||
  rw_fail "slurmctld did not restart with a bad file"
grep -q 'keeping the last accepted description (.*rackwise.last-good.yaml)' "$RW_TMP/log/slurmctld.log" &&
  rw_ok "the saved description is in force after the restart" || rw_fail "no 'last accepted description' log line"
[[ $(rw_state "$k") == RUNNING && $(rw_state "$p3") == PENDING ]] && rw_ok "jobs and caps as before the restart" ||
  rw_fail "after restart with a bad file: k $(rw_state "$k"), p3 $(rw_state "$p3")"
k2=$(rw_submit -p hgx -w gpu02 --gpus=4)
rw_wait_state "$k2" RUNNING 30 && rw_ok "placement goes on after the restart with a bad file" ||
  rw_fail "job after restart with a bad file: $(rw_state "$k2") '$(rw_reason "$k2")'"
cancel_all
sed 's/power_cap_kw: 41/power_cap_kw: 20/' "$RW_TMP/rackwise.yaml.good" >"$yaml"  # h01: 10 kW idle + 10 GPUs
reconfigure_and_wait
x=$(rw_submit -w gpu01 --gpus=8)
rw_wait_state "$x" RUNNING 20 || rw_fail "8 GPUs under the lowered h01 cap did not start"
h=$(rw_submit -w gpu02 --gpus=4)
if rw_wait_reason "$h" 'rackwise:' 20 && [[ $(rw_state "$h") == PENDING ]]; then rw_ok "lowered h01 cap applies at once: $(rw_reason "$h")"
else rw_fail "job over the lowered cap: $(rw_state "$h") '$(rw_reason "$h")'"; fi
cp "$RW_TMP/rackwise.yaml.good" "$yaml"
scontrol reconfigure
rw_wait_state "$h" RUNNING 20 && rw_ok "cap restored: the job starts" || rw_fail "job did not start after the cap was restored"
cancel_all

# --- Nodes down, drained, vanished -------------------------------------------------------------------------
scontrol update nodename=gpu05 state=down reason=rackwise-test
scontrol update nodename=gpu06 state=drain reason=rackwise-test
i1=$(rw_submit -p h02 --gpus=16)
rw_wait_state "$i1" RUNNING 20 || rw_fail "16-GPU job with 2 nodes out not running: $(rw_reason "$i1")"
if ! rw_job_nodes "$i1" | grep -q 'gpu0[56]'; then rw_ok "down/drained nodes avoided ($(rw_job_nodes "$i1" | paste -sd,))"
else rw_fail "job placed on a down/drained node"; fi
i2=$(rw_submit -p h02 --gpus=8)
rw_wait_backfill 2 30 || rw_fail "backfill did not cycle"
[[ $(rw_state "$i2") == PENDING ]] && rw_ok "no room left with 2 nodes out: job waits ($(rw_reason "$i2"))" ||
  rw_fail "i2 $(rw_state "$i2") on $(rw_job_nodes "$i2" | paste -sd,)"
cancel_all
scontrol update nodename=gpu05,gpu06 state=resume
# A slurmd that vanishes: its node stops answering; slurmctld and placement carry on.
n=0
for name in "${RW_NODES[@]}"; do [[ $name == gpu08 ]] && break; n=$((n + 1)); done
kill -KILL "${RW_PIDS[$((n + 1))]}" 2>/dev/null
j=$(rw_submit -p hgx --gpus=8)
rw_wait_state "$j" RUNNING 20 && rw_ok "placement carries on with a vanished slurmd" || rw_fail "job did not start"
scontrol ping | grep -q UP && rw_ok "slurmctld alive after a slurmd vanished" || rw_fail "slurmctld died"
cancel_all

# --- cons_tres's own GPU split must not break the reserve: a per-job GPU count over two named nodes ---------
# 10% reserve and both HGX racks at 30 kW: 27 kW usable = 17 GPUs each (the whole cap: 20). Each rack holds 15,
# so the core plans the 4-GPU job as gpu03:2 + gpu07:2; cons_tres alone gives the first node 3 (h01 at 27.3 kW:
# inside the whole cap, into the reserve). The job must get exactly the core's split.
{ sed 's/power_cap_kw: 41/power_cap_kw: 30/' "$RW_TMP/rackwise.yaml.good"; printf 'policy:\n  power_reserve_pct: 10\n'; } >"$yaml"
reconfigure_and_wait
fillers=()
for spec in gpu01:8 gpu02:7 gpu05:8 gpu06:7; do fillers+=("$(rw_submit -w "${spec%:*}" --gpus="${spec#*:}")"); done
for f in "${fillers[@]}"; do rw_wait_state "$f" RUNNING 20 || rw_fail "filler job $f did not start: $(rw_reason "$f")"; done
sp=$(rw_submit -w gpu03,gpu07 -N 2 --gpus=4)
if rw_wait_state "$sp" RUNNING 30; then
  split=$(rw_job_gpus "$sp" | awk '{print $1 ":" split($2, a, ",")}' | sort | paste -sd' ')
  [[ $split == "gpu03:2 gpu07:2" ]] && rw_ok "the job got exactly the core's split ($split)" ||
    rw_fail "the job got $split, the core planned gpu03:2 gpu07:2"
else
  rw_fail "split job not running: $(rw_reason "$sp")"
fi
over=$(racks_over_usable 10)
[[ -z $over ]] && rw_ok "no rack above its usable cap (10% reserve)" || rw_fail "over the usable cap: $over"
# A per-task form (GPUs tied to tasks: the split is cons_tres's) is checked against the same usable caps.
pt=$(rw_submit -w gpu04,gpu07 -N 2 -n 4 --gpus-per-task=1)
rw_wait_state "$pt" RUNNING 30 || rw_log "per-task job: $(rw_state "$pt") '$(rw_reason "$pt")'"
over=$(racks_over_usable 10)
[[ -z $over ]] && rw_ok "with a per-task job too: no rack above its usable cap" || rw_fail "over the usable cap: $over"
cancel_all
cp "$RW_TMP/rackwise.yaml.good" "$yaml"
reconfigure_and_wait

# --- A description that disagrees with slurm.conf: the last accepted one is used; with none, no start -------
rw_stop_ctld
awk '/- name: nvl02$/{skip=1} skip&&/^  - name:/&&!/nvl02/{skip=0} !skip' "$RW_TMP/rackwise.yaml.good" >"$yaml"
: >"$RW_TMP/log/slurmctld.log"
if rw_start_ctld && grep -q 'rackwise: rejected the cluster description: .*nvl02-t01' "$RW_TMP/log/slurmctld.log"; then
  rw_ok "a disagreeing file at restart is rejected and the last accepted one used"
else
  rw_fail "restart with a disagreeing file and a saved description"
fi
rw_stop_ctld
rm -f "$RW_TMP/state/rackwise.last-good.yaml"
: >"$RW_TMP/log/slurmctld.log"
if rw_start_ctld; then
  rw_fail "slurmctld started with a description that lacks rack nvl02 and nothing saved"
else
  grep -q 'rackwise: refusing to start: .*nvl02-t01 has GPUs but no rack lists it' "$RW_TMP/log/slurmctld.log" &&
    rw_ok "refused to start: $(grep -o 'rackwise: refusing to start: .\{0,100\}' "$RW_TMP/log/slurmctld.log" | head -1)" ||
    rw_fail "no clear refusal message"
fi
RW_CTLD_PID=""
cp "$RW_TMP/rackwise.yaml.good" "$yaml"
rw_start_ctld && rw_ok "starts again with the right file" || rw_fail "did not start with the good file"

rw_check_never
rw_log "$RW_FAILS failure(s)"
exit $((RW_FAILS > 0))
