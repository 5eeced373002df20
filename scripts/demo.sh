#!/usr/bin/env bash
# The run command: installs what it needs, builds the rackwise CLI, and runs it on the built-in example
# (examples/demo.yaml: four HGX H100 racks and four GB200 NVL72 racks under row and hall power caps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RACKWISE_BUILD_DIR:-$root/build}
RACKWISE_WITH_SLURM=0 RACKWISE_TARGETS=rackwise "$root/scripts/build.sh"
rw="$build/tools/rackwise"
cluster="$root/examples/demo.yaml"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "rackwise $*"; "$rw" "$@" || echo "(exit $?)"; }

run validate "$cluster"
run place --cluster "$cluster" --gpus 64
run place --cluster "$cluster" --gpus 16 --gpus-per-node 4 --json
run explain --cluster "$cluster" --gpus 288 --locality required
trace=$(mktemp --suffix=.csv)
run trace --output "$trace" generate --mix research --jobs 2000 --seed 7 --gpus-cluster 416
run simulate --cluster "$cluster" --trace "$trace" --policy all
rm -f "$trace"
