#!/usr/bin/env bash
# Installs the Debian packages, fetches Slurm's configured source (cached) and builds everything into
# ${RACKWISE_BUILD_DIR:-build}. Used by test.sh and demo.sh; safe to run again (incremental).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RACKWISE_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
slurm_src=""
if [[ ${RACKWISE_WITH_SLURM:-1} == 1 ]]; then
  slurm_src=$("$root/scripts/fetch-slurm-source.sh" | tail -n 1)
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRACKWISE_SLURM_SRC="$slurm_src" \
  -DRACKWISE_BUILD_K8S=ON -DRACKWISE_BUILD_SLURM=ON >/dev/null
ninja -C "$build" -j"$(nproc)" ${RACKWISE_TARGETS:-}
