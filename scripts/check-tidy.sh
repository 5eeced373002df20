#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks, every finding an error) over the placement core, the node power code and the
# HTTP client: the non-test sources of common/, node_power/ and http_client/, with the compile commands of an
# existing build directory (${RACKWISE_BUILD_DIR:-build}, as scripts/build.sh makes it). Other folders: pass them
# as arguments. About 10 s of CPU per file; runs on every core.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RACKWISE_BUILD_DIR:-$root/build}
command -v run-clang-tidy >/dev/null || { echo "check-tidy: run-clang-tidy missing (apt-get install clang-tidy)" >&2; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "check-tidy: no $build/compile_commands.json (run scripts/build.sh)" >&2; exit 1; }
folders=("$@")
((${#folders[@]})) || folders=(common node_power http_client)
files=()
for f in "${folders[@]}"; do
  while IFS= read -r file; do files+=("$root/$file"); done < <(cd "$root" && git ls-files "$f/*.cc" | grep -v '_test\.cc$')
done
echo "check-tidy: ${#files[@]} files"
# run-clang-tidy takes regular expressions: match each file exactly.
regex=$(printf '%s$|' "${files[@]}")
run-clang-tidy -quiet -p "$build" -j "$(nproc)" "${regex%|}" >"$build/clang-tidy.log" 2>&1 || {
  grep -E "(warning|error):" "$build/clang-tidy.log" | sort -u >&2
  echo "check-tidy: findings above (full log: $build/clang-tidy.log)" >&2
  exit 1
}
echo "check-tidy: no findings"
