// Checks that the recorded API objects the tests serve are of upstream shape: every built-in kind validates
// against the Kubernetes OpenAPI schemas in the npm package kubernetes-models (pods, ResourceClaims, templates,
// ResourceSlices, DeviceClasses), a ComputeDomain against the fields of NVIDIA's published CRD
// (resource.nvidia.com/v1beta1: spec.numNodes integer, spec.channel.resourceClaimTemplate.name string,
// spec.channel.allocationMode Single|All), and the Workload API's kinds, which the package has no schema for (PodGroup
// of scheduling.k8s.io v1alpha2, v1alpha3, v1beta1; 1.35's v1alpha1 Workload), against upstream's required fields. Files: JSON arrays of objects, List objects, or watch
// streams (one {"type","object"} per line).
// Usage: node validate_recorded_objects.mjs NODE_MODULES_DIR FILE...
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const problems = [];
let checked = 0;

function objectsOf(file) {
  const text = readFileSync(file, "utf8");
  if (file.endsWith(".jsonl")) {
    return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l).object).filter((o) => o?.kind !== "Status");
  }
  const doc = JSON.parse(text);
  if (Array.isArray(doc)) return doc;
  if (Array.isArray(doc.items)) return doc.items.map((o) => ({ apiVersion: doc.apiVersion, kind: doc.kind.replace(/List$/, ""), ...o }));
  return [doc.Pod ?? doc];
}

const computeDomain = (o, where) => {
  const s = o.spec ?? {};
  if (!Number.isInteger(s.numNodes) || s.numNodes < 0) problems.push(`${where}: spec.numNodes must be an integer >= 0`);
  if (typeof s.channel?.resourceClaimTemplate?.name !== "string") problems.push(`${where}: spec.channel.resourceClaimTemplate.name must be a string`);
  if (s.channel?.allocationMode !== undefined && !["Single", "All"].includes(s.channel.allocationMode)) problems.push(`${where}: spec.channel.allocationMode must be Single or All`);
};
// A PodGroupSchedulingPolicy: exactly one of basic, gang {minCount >= 1} (scheduling.k8s.io v1alpha1..v1beta1).
const policy = (p, where) => {
  if (typeof p !== "object" || p === null) { problems.push(`${where}: required`); return; }
  if ((p.basic !== undefined) === (p.gang !== undefined)) problems.push(`${where}: exactly one of basic, gang`);
  const n = p.gang?.minCount;
  if (p.gang !== undefined && (!Number.isInteger(n) || n < 1)) problems.push(`${where}.gang.minCount must be a positive integer`);
};
// PodGroup objects (1.36 v1alpha2; 1.37 v1alpha3 and v1beta1): spec.schedulingPolicy is required.
const podGroup = (o, where) => policy(o.spec?.schedulingPolicy, `${where}: spec.schedulingPolicy`);
// 1.35's Workload (v1alpha1): its pod groups inside, spec.podGroups[] {name, policy}.
const workloadV1alpha1 = (o, where) => {
  const groups = o.spec?.podGroups;
  if (!Array.isArray(groups) || groups.length === 0) { problems.push(`${where}: spec.podGroups must be a non-empty array`); return; }
  groups.forEach((g, i) => {
    if (typeof g.name !== "string" || g.name === "") problems.push(`${where}: spec.podGroups[${i}].name must be a string`);
    policy(g.policy, `${where}: spec.podGroups[${i}].policy`);
  });
};
const podGroupVersions = ["scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1"];

for (const file of files) {
  for (const o of objectsOf(file)) {
    const where = `${path.basename(file)}: ${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
    checked++;
    if (o.apiVersion === "resource.nvidia.com/v1beta1" && o.kind === "ComputeDomain") { computeDomain(o, where); continue; }
    if (podGroupVersions.includes(o.apiVersion) && o.kind === "PodGroup") { podGroup(o, where); continue; }
    if (o.apiVersion === "scheduling.k8s.io/v1alpha1" && o.kind === "Workload") { workloadV1alpha1(o, where); continue; }
    if (o.apiVersion?.startsWith("scheduling.k8s.io/") && o.apiVersion !== "scheduling.k8s.io/v1") {
      problems.push(`${where}: ${o.apiVersion} ${o.kind} is not a Workload API kind and version upstream serves`);
      continue;
    }
    const [group, version] = o.apiVersion?.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion ?? "v1"];
    let models;
    try {
      models = await load(`kubernetes-models/${group ? group + "/" : ""}${version}/index.js`);
    } catch {
      problems.push(`${where}: no schema for apiVersion ${o.apiVersion}`);
      continue;
    }
    const Model = models[o.kind];
    if (!Model) { problems.push(`${where}: unknown kind ${o.kind} in ${o.apiVersion}`); continue; }
    try { new Model({ apiVersion: o.apiVersion, kind: o.kind, ...o }).validate(); } catch (e) { problems.push(`${where}: ${e.message}`); }
  }
}
for (const p of problems) console.error(`FAIL: ${p}`);
if (problems.length === 0) console.log(`ok: ${checked} recorded objects are of upstream shape`);
process.exit(problems.length === 0 ? 0 : 1);
