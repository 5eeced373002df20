#!/bin/sh
# The CLI end to end: size a cluster with caps that bind, generate a trace, replay it under every policy, and let
# the independent checker confirm that no GPU is shared and that rackwise, static-cap and capped-first-fit stay
# under every cap.
# Usage: cli_roundtrip.sh RACKWISE_BIN CHECK_BIN WORKDIR
set -eu
rw=$1; check=$2; dir=$3
mkdir -p "$dir"
"$rw" size --system h100 --gpus 512 --row-cap-pct 70 --emit-cluster "$dir/h100.yaml" > /dev/null
"$rw" size --system gb200-nvl72 --gpus 576 --rack-cap-kw 100 --emit-cluster "$dir/nvl.yaml" > /dev/null
"$rw" trace generate --mix research --jobs 1500 --seed 3 --gpus-cluster 512 --load 1.3 \
  --watts-fraction 0.1 --watts-per-gpu 500 > "$dir/h100.csv"
"$rw" trace generate --mix training --jobs 400 --seed 4 --gpus-cluster 576 --node-gpus 4 --load 1.3 > "$dir/nvl.csv"
for c in h100 nvl; do
  "$rw" simulate --cluster "$dir/$c.yaml" --trace "$dir/$c.csv" --policy all --placements "$dir/$c.jsonl" > "$dir/$c.txt"
  for p in rackwise static-cap capped-first-fit; do
    "$check" "$dir/$c.yaml" "$dir/$c.csv" "$dir/$c.$p.jsonl" --expect-no-violations
  done
  for p in first-fit spread tree-bestfit; do
    "$check" "$dir/$c.yaml" "$dir/$c.csv" "$dir/$c.$p.jsonl"
  done
done
# With a slowdown for jobs outside their fewest NVLink domains: the checker recounts the domains and expects
# exactly those jobs to run 30% longer; the table gains the work-done row.
"$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --policy all --spread-slowdown 0.3 \
  --placements "$dir/slow.jsonl" > "$dir/slow.txt"
grep -q "work done (%)" "$dir/slow.txt"
grep -q "power ceiling (%)" "$dir/slow.txt"
grep -q "capped-first-fit" "$dir/slow.txt"
"$check" "$dir/nvl.yaml" "$dir/nvl.csv" "$dir/slow.rackwise.jsonl" --expect-no-violations --spread-slowdown 0.3
for p in first-fit spread tree-bestfit static-cap; do
  "$check" "$dir/nvl.yaml" "$dir/nvl.csv" "$dir/slow.$p.jsonl" --spread-slowdown 0.3
done
"$check" "$dir/nvl.yaml" "$dir/nvl.csv" "$dir/slow.capped-first-fit.jsonl" --expect-no-violations --spread-slowdown 0.3
# Checked against no slowdown, a stretched job is caught.
if "$check" "$dir/nvl.yaml" "$dir/nvl.csv" "$dir/slow.spread.jsonl" 2> /dev/null > /dev/null; then exit 1; fi
if "$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --spread-slowdown -1 2> /dev/null; then exit 1; fi
# A trace made for 8-GPU nodes is flagged against 4-GPU NVL72 trays, when written and when replayed; one made
# from the cluster itself is not, but its 512-GPU jobs are: the 100 kW racks never power more than 448 GPUs.
"$rw" trace generate --mix training --jobs 100 --seed 5 --cluster "$dir/nvl.yaml" --node-gpus 8 \
  > "$dir/misfit.csv" 2> "$dir/misfit.err"
grep -q "can never run on" "$dir/misfit.err"
grep -q "Node has fewer GPUs than gpus_per_node" "$dir/misfit.err"
"$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/misfit.csv" --json 2> /dev/null | grep -q '"trace_misfits"'
"$rw" trace generate --mix training --jobs 100 --seed 5 --cluster "$dir/nvl.yaml" > "$dir/fit.csv" 2> "$dir/fit.err"
if grep -q "fewer GPUs than gpus_per_node" "$dir/fit.err"; then exit 1; fi
grep -q "of 512 GPUs, 4 per node: .* can never give it more than 448" "$dir/fit.err"
# Measured power: each job measures 55..90% of what it is counted at (its declared watts, else the
# H100's 962.5 W); replayed as telemetry with reclaim_pct 50, the independent checker (which reads the measured
# column itself) finds no excursion. --reclaim-pct needs --telemetry; a bad measurement names file, line, column.
awk -F, 'BEGIN { OFS = "," } NR == 1 { print $0, "measured_watts_per_gpu"; next }
  { w = ($7 != "" ? $7 : 962.5); print $0, sprintf("%.1f", w * (0.55 + 0.35 * ((NR * 7919) % 1000) / 999)) }' \
  "$dir/h100.csv" > "$dir/measured.csv"
"$rw" simulate --cluster "$dir/h100.yaml" --trace "$dir/measured.csv" --telemetry --reclaim-pct 50 --json \
  --placements "$dir/measured.jsonl" > "$dir/measured.json"
grep -q '"cap_excursions": 0,' "$dir/measured.json"
grep -q '"reclaim_pct": 50' "$dir/measured.json"
"$check" "$dir/h100.yaml" "$dir/measured.csv" "$dir/measured.jsonl" --expect-no-violations
if "$rw" simulate --cluster "$dir/h100.yaml" --trace "$dir/measured.csv" --reclaim-pct 20 2> /dev/null; then exit 1; fi
printf 'id,submit,duration,gpus,measured_watts_per_gpu\nx,0,5,8,0\n' > "$dir/badm.csv"
if "$rw" simulate --cluster "$dir/h100.yaml" --trace "$dir/badm.csv" 2> "$dir/badm.err"; then exit 1; fi
grep -q "badm.csv:2: field 'measured_watts_per_gpu'" "$dir/badm.err"
# Two owners on shared racks: each mode's placements pass the checker with no violation; compare
# prints the ratio; a share of 1 and --split-owners with --policy all are usage errors (exit 2) naming the flag.
for m in shared static; do
  "$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --split-owners $m --placements "$dir/split-$m.jsonl" \
    > /dev/null
  "$check" "$dir/nvl.yaml" "$dir/nvl.csv" "$dir/split-$m.jsonl" --expect-no-violations
done
"$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --split-owners compare --json \
  | grep -q '"gpu_hours_by_horizon_ratio"'
rc=0; "$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --split-owners static --static-share 1 \
  2> "$dir/share.err" || rc=$?
test "$rc" -eq 2
grep -q -- '--static-share' "$dir/share.err"
rc=0; "$rw" simulate --cluster "$dir/nvl.yaml" --trace "$dir/nvl.csv" --split-owners shared --policy all 2> /dev/null || rc=$?
test "$rc" -eq 2
# A bad trace is reported with its file and line, not a crash.
printf 'id,submit,duration,gpus,gpus_per_node,locality,watts_per_gpu\nx,0,-5,8,,,\n' > "$dir/bad.csv"
if "$rw" simulate --cluster "$dir/h100.yaml" --trace "$dir/bad.csv" 2> "$dir/bad.err"; then exit 1; fi
grep -q "bad.csv:2: field 'duration'" "$dir/bad.err"
# The picture: one rectangle per rack, well-formed enough for a browser; a bad system is a usage error.
"$rw" size --system b200 --gpus 300 --nodes-per-rack 5 --svg "$dir/b200.svg" > /dev/null
test "$(grep -c '<rect ' "$dir/b200.svg")" -eq 8
grep -q '</svg>' "$dir/b200.svg"
if "$rw" size --system h200 --gpus 8 2> /dev/null; then exit 1; fi
echo "cli round trip: ok"
