#!/usr/bin/env bash
# rackwise status --grpc against a real rackwise-extender (standalone, on loopback): the racks and power domains of
# the description with their idle draw, caps and headroom, as the extender's ClusterState reports them, row for
# row the same as the table built from the description itself (both come from the core's power view).
# Usage: test_status_grpc.sh RACKWISE RACKWISE_EXTENDER DESCRIPTION
set -uo pipefail
cli=$1 extender=$2 description=$3
port=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))  # below the ephemeral ports (32768 up)
log=$(mktemp /tmp/rackwise-status-grpc.XXXXXX)
"$extender" --cluster "$description" --listen "127.0.0.1:$((port + 1))" --grpc-listen "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
out=""
for ((t = 0; t < 100; t++)); do
  kill -0 "$pid" 2>/dev/null || { echo "FAIL: rackwise-extender exited:" >&2; cat "$log" >&2; exit 1; }
  out=$("$cli" status --grpc "127.0.0.1:$port" 2>/dev/null) && break
  sleep 0.1
done
# demo.yaml: r04 holds 4 idle HGX nodes (10 kW) under a 30 kW cap; its row has more room, so 20 kW headroom.
row=$(awk '$1 == "r04"' <<<"$out")
read -r _ draw measured cap _ headroom _ jobs gpus <<<"$row"
if [[ $draw == 10.0 && $measured == - && $cap == 30.0 && $headroom == 20.0 && $jobs == 0 && $gpus == 0/32 ]]; then
  echo "ok: $row"
else
  echo "FAIL: want r04 at 10.0 kW of 30.0, nothing measured, 20.0 kW headroom, no job, 0/32 GPUs; got '$row' in:" >&2
  echo "$out" >&2
  exit 1
fi
# Every row but the title (which names the source) equals the table from the description alone.
local_table=$("$cli" status --cluster "$description" | tail -n +2)
if [[ $(tail -n +2 <<<"$out") == "$local_table" ]] && grep -q '^ *row-a/' <<<"$out"; then
  echo "ok: gRPC and description tables agree on $(wc -l <<<"$local_table") rows, power domains included"
else
  echo "FAIL: the gRPC table differs from the description's:" >&2
  diff <(tail -n +2 <<<"$out") <(echo "$local_table") >&2
  exit 1
fi
