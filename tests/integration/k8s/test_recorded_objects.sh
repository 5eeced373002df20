#!/usr/bin/env bash
# The recorded API objects under testdata/ (what the tests' API servers serve) validate against the upstream
# schemas: npm kubernetes-models for built-in kinds, NVIDIA's ComputeDomain CRD fields (validate_recorded_objects.mjs).
# Environment: RW_NPM_DIR (node_modules kept outside the source tree, shared with tests/deploy).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
npm_dir=${RW_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rackwise/npm}
package=kubernetes-models@5.1.0
skip_or_fail() {
  if [[ -n ${CI:-} ]]; then echo "FAIL: $*" >&2; exit 1; fi
  echo "SKIP: $*" >&2
  exit 77
}
command -v node >/dev/null || skip_or_fail "node missing (apt-get install npm)"
if ! grep -q "\"version\": \"${package##*@}\"" "$npm_dir/node_modules/kubernetes-models/package.json" 2>/dev/null; then
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --prefer-offline --no-save "$package" >"$npm_dir/install-models.log" 2>&1 ||
    skip_or_fail "npm install $package failed"
fi
shopt -s nullglob
node "$here/validate_recorded_objects.mjs" "$npm_dir/node_modules" "$here"/testdata/dra_*.json "$here"/testdata/dra_*.jsonl
