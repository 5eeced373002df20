#!/usr/bin/env bash
# The test command: installs what it needs, builds, and runs every test (unit, property, integration with real
# slurmctld/slurmd daemons and the extender over real HTTP, the fuzzers for a fixed number of runs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RACKWISE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure --timeout 1200 -j"${RACKWISE_TEST_JOBS:-1}" "$@"
