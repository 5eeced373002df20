#!/usr/bin/env bash
# deploy/k8s is a kustomize base and deploy/overlays/{second-scheduler,prometheus-operator} overlays: all render offline with
# `kubectl kustomize`, every object validates against the Kubernetes schemas (npm kubernetes-models), references
# between objects resolve, and every manifest in deploy/k8s is in the base's kustomization (scheduler-config.yaml
# excepted: it is kube-scheduler's --config file, not an API object). The DRA scheduler configuration is the base's
# without managedResources (kube-scheduler never sends an extender with managedResources a pod whose GPUs come
# from claims), and the second scheduler's has none either.
# Environment: RW_NPM_DIR (where node_modules is kept, outside the source tree; default a cache dir).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
npm_dir=${RW_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rackwise/npm}
packages=(kubernetes-models@5.1.0 yaml@2.9.1 @kubernetes-models/prometheus-operator@6.0.0)

skip_or_fail() {
  if [[ -n ${CI:-} ]]; then echo "FAIL: $*" >&2; exit 1; fi
  echo "SKIP: $*" >&2
  exit 77
}
command -v kubectl >/dev/null || skip_or_fail "kubectl missing (apt-get install kubernetes-client)"
command -v node >/dev/null || skip_or_fail "node missing (apt-get install npm)"
have_modules() {
  local p
  for p in "${packages[@]}"; do
    grep -q "\"version\": \"${p##*@}\"" "$npm_dir/node_modules/${p%@*}/package.json" 2>/dev/null || return 1
  done
}
if ! have_modules; then
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --prefer-offline --no-save "${packages[@]}" >"$npm_dir/install.log" 2>&1 ||
    { tail -5 "$npm_dir/install.log" >&2; skip_or_fail "npm install ${packages[*]} failed"; }
fi

fails=0
# Every API object file of the base is listed in its kustomization.
for f in "$root"/deploy/k8s/*.yaml; do
  name=$(basename "$f")
  [[ $name == kustomization.yaml || $name == scheduler-config*.yaml ]] && continue
  grep -q '^kind:' "$f" || continue
  if ! grep -Eq "^  - $name\$" "$root/deploy/k8s/kustomization.yaml"; then
    echo "FAIL: deploy/k8s/$name is not under resources in deploy/k8s/kustomization.yaml" >&2
    fails=$((fails + 1))
  fi
done

out=$(mktemp -d /tmp/rackwise-kustomize.XXXXXX)
trap 'rm -rf "$out"' EXIT
render() {  # render DIR NAME [SCHEDULER_PROFILE]
  if ! kubectl kustomize "$root/$1" >"$out/$2.yaml" 2>"$out/$2.err"; then
    echo "FAIL: kubectl kustomize $1:" >&2
    cat "$out/$2.err" >&2
    fails=$((fails + 1))
    return
  fi
  node "$here/validate_manifests.mjs" "$npm_dir/node_modules" "$out/$2.yaml" ${3:-} || fails=$((fails + 1))
}
render deploy/k8s base
render deploy/overlays/second-scheduler second-scheduler rackwise
render deploy/overlays/prometheus-operator prometheus-operator
# The Grafana dashboard: JSON, and every rackwise metric it queries is one the extender or the node agent exports.
dashboard=$root/deploy/overlays/prometheus-operator/rackwise-dashboard.json
if ! node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$dashboard"; then
  echo "FAIL: $dashboard is not JSON" >&2
  fails=$((fails + 1))
fi
for metric in $(grep -o 'rackwise_[a-z_]*' "$dashboard" | sed 's/_bucket$//' | sort -u); do
  if ! grep -rqF "\"$metric" "$root/k8s_extender" "$root/node_agent"; then
    echo "FAIL: the dashboard queries $metric, which neither the extender nor the node agent exports" >&2
    fails=$((fails + 1))
  fi
done
if ! node --input-type=module - "$npm_dir/node_modules" "$root" <<'JS'; then
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [modules, root] = process.argv.slice(2);
const YAML = await import(pathToFileURL(`${modules}/yaml/dist/index.js`).href);
const read = (f) => YAML.parse(readFileSync(`${root}/${f}`, "utf8"));
const base = read("deploy/k8s/scheduler-config.yaml"), dra = read("deploy/k8s/scheduler-config-dra.yaml");
const overlay = read("deploy/overlays/second-scheduler/scheduler-config.yaml");
const bad = [];
if (!base.extenders[0].managedResources) bad.push("the base configuration lost managedResources");
if (dra.extenders.some((e) => e.managedResources) || overlay.extenders.some((e) => e.managedResources)) {
  bad.push("a DRA-capable configuration has managedResources: claim-only pods would never reach the extender");
}
delete base.extenders[0].managedResources;
if (JSON.stringify(base) !== JSON.stringify(dra)) bad.push("scheduler-config-dra.yaml differs from the base beyond managedResources");
for (const b of bad) console.error(`FAIL: ${b}`);
process.exit(bad.length ? 1 : 0);
JS
  fails=$((fails + 1))
fi
((fails == 0)) && echo "ok: kustomize base and overlays render and validate; the dashboard queries exported metrics"
exit $((fails != 0))
