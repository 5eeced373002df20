#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build directory (only the schema and the parser, not
# the whole project) and runs each one for a fixed number of seeded runs, starting from the seed corpus (the
# example and the test descriptions). Exits non-zero on any crash, leak, undefined behaviour, timeout or
# out-of-memory report, and prints where the failing input was saved.
#
#   scripts/run-fuzzers.sh [--build-dir DIR] [--runs N] [--max-time SECONDS] [--seed S]
#
# Defaults: DIR=build-fuzz (or $RACKWISE_FUZZ_BUILD_DIR), N=20000 (or $RACKWISE_FUZZ_RUNS), at most 300 s per
# fuzzer (or $RACKWISE_FUZZ_MAX_TIME), seed 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${RACKWISE_FUZZ_BUILD_DIR:-$root/build-fuzz}
runs=${RACKWISE_FUZZ_RUNS:-20000}
max_time=${RACKWISE_FUZZ_MAX_TIME:-300}
seed=1
jobs=${RACKWISE_FUZZ_JOBS:-2}
fuzzers=(description_fuzzer extender_args_fuzzer)

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --max-time) max_time=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-fuzzers: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "run-fuzzers: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[[ -f $build_dir/CMakeCache.txt ]] && generator=()  # keep whatever generator the directory already uses

echo "run-fuzzers: building ${fuzzers[*]} with clang in $build_dir"
mkdir -p "$build_dir"
cmake -S "$root/tests/fuzz" -B "$build_dir" "${generator[@]}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log" >&2; exit 1; }
cmake --build "$build_dir" --parallel "$jobs" --target "${fuzzers[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for f in "${fuzzers[@]}"; do
  corpus=$build_dir/corpus/$f   # what this run finds; cleared so every run starts from the seeds alone
  artifacts=$build_dir/artifacts/$f/
  rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [[ -f $root/tests/fuzz/${f%_fuzzer}.dict ]] && dict=(-dict="$root/tests/fuzz/${f%_fuzzer}.dict")
  log=$build_dir/$f.log
  seeds=$build_dir/seeds
  [[ -d $build_dir/seeds-$f ]] && seeds=$build_dir/seeds-$f
  echo "run-fuzzers: $f: $runs runs (seed $seed, at most ${max_time}s), log in $log"
  # `timeout` as a last resort: libFuzzer bounds the run itself, but a stuck crash handler must not hang CI.
  if timeout --kill-after=30 $((max_time + 120)) "$build_dir/$f" -runs="$runs" -seed="$seed" -max_total_time="$max_time" -max_len=4096 -timeout=60 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" "${dict[@]}" \
      "$corpus" "$seeds" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" | sed "s/^/run-fuzzers: $f: /" || true
  else
    status=1
    echo "run-fuzzers: $f FAILED; the end of its log:" >&2
    tail -n 60 "$log" >&2
    echo "run-fuzzers: failing inputs are in $artifacts" >&2
  fi
done
exit $status
