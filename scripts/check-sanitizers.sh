#!/usr/bin/env bash
# The core's unit and property tests (placement, ledger, description, simulator rules, telemetry rules, the node's GPU
# power leases) and the HTTP client's (threads, cancel, callbacks) built with AddressSanitizer and
# UndefinedBehaviorSanitizer in their own build directory, and run.
# Any report fails the run (UBSan does not recover; ASan stops at the first error). Run by .ci/run after the test
# command; needs what scripts/install-deps.sh installs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RACKWISE_SANITIZE_BUILD_DIR:-$root/build-sanitize}
launcher=()
if command -v ccache >/dev/null 2>&1 && [[ ${RACKWISE_CCACHE:-1} == 1 ]]; then
  export CCACHE_DIR=${CCACHE_DIR:-${RACKWISE_CACHE:-$HOME/.cache/rackwise}/ccache} CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# -O1: the sanitizers' usual optimisation level (fast enough to run the property tests, frames still exact).
cmake -S "$root" -B "$build" "${launcher[@]}" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DRACKWISE_SANITIZE=ON -DRACKWISE_WERROR=ON -DRACKWISE_BUILD_K8S=OFF -DRACKWISE_BUILD_SLURM=OFF \
  -DRACKWISE_BUILD_BENCHMARKS=OFF -DRACKWISE_BUILD_NODE_AGENT=OFF >/dev/null
targets=(rackwise_description_tests rackwise_placement_tests rackwise_simulation_tests rackwise_node_power_tests rackwise_telemetry_tests
  rackwise_http_client_tests fake_nvml)
ninja -C "$build" -j"$(nproc)" "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
ctest --output-on-failure \
  -R '^(description_unit_tests|placement_unit_tests|simulation_unit_tests|node_power_unit_tests|telemetry_unit_tests|http_client_unit_tests)$'
