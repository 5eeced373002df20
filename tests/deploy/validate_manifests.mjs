// Validates rendered Kubernetes manifests (a multi-document YAML file, the output of `kubectl kustomize`)
// against the Kubernetes OpenAPI schemas shipped in the npm package kubernetes-models, and checks what the
// schemas cannot: every object is a known kind, names referenced across objects (ConfigMap and Secret volumes,
// service accounts, RBAC subjects) exist in the rendering, and a KubeSchedulerConfiguration carried in a ConfigMap
// is well formed and points its extender at a rendered Service. Prometheus Operator kinds (ServiceMonitor,
// PodMonitor) validate against @kubernetes-models/prometheus-operator and must select a rendered Service or pod
// template by its labels, on a port it names.
// Usage: node validate_manifests.mjs NODE_MODULES_DIR RENDERED.yaml [EXPECTED_SCHEDULER_NAME]
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, rendered, schedulerName] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const YAML = await load("yaml/dist/index.js");
const problems = [];
const docs = YAML.parseAllDocuments(readFileSync(rendered, "utf8")).map((d) => d.toJS()).filter((d) => d);

const key = (o) => `${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
const rendered_keys = new Set(docs.map(key));
const has = (kind, ns, name) => rendered_keys.has(`${kind}/${ns ?? ""}/${name}`);

for (const doc of docs) {
  const where = key(doc);
  const [group, version] = doc.apiVersion?.includes("/") ? doc.apiVersion.split("/") : ["", doc.apiVersion];
  let models;
  // The Prometheus Operator's kinds come from its own package of the same family.
  const pkg = group === "monitoring.coreos.com" ? "@kubernetes-models/prometheus-operator" : "kubernetes-models";
  try {
    models = await load(`${pkg}/${group ? group + "/" : ""}${version}/index.js`);
  } catch {
    problems.push(`${where}: unknown apiVersion ${doc.apiVersion}`);
    continue;
  }
  const Model = models[doc.kind];
  if (!Model) {
    problems.push(`${where}: unknown kind ${doc.kind} in ${doc.apiVersion}`);
    continue;
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    problems.push(`${where}: ${e.message}`);
  }
}

// Cross-object references the schemas cannot see.
for (const doc of docs) {
  const ns = doc.metadata?.namespace;
  const pod = doc.spec?.template?.spec;
  if (pod) {
    for (const v of pod.volumes ?? []) {
      if (v.configMap && !has("ConfigMap", ns, v.configMap.name)) problems.push(`${key(doc)}: no ConfigMap ${v.configMap.name}`);
      if (v.secret && !has("Secret", ns, v.secret.secretName)) problems.push(`${key(doc)}: no Secret ${v.secret.secretName}`);
    }
    const sa = pod.serviceAccountName;
    if (sa && !has("ServiceAccount", ns, sa)) problems.push(`${key(doc)}: no ServiceAccount ${sa}`);
  }
  for (const s of doc.subjects ?? []) {
    if (s.kind === "ServiceAccount" && !has("ServiceAccount", s.namespace, s.name)) {
      problems.push(`${key(doc)}: subject ServiceAccount ${s.namespace}/${s.name} is not rendered`);
    }
  }
}

// A ServiceMonitor selects a rendered Service by labels and scrapes a port that Service names; a PodMonitor selects
// a rendered pod template and a container port it names.
const matches = (selector, labels) => Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
for (const doc of docs.filter((d) => d.kind === "ServiceMonitor")) {
  const services = docs.filter((d) => d.kind === "Service" && matches(doc.spec?.selector, d.metadata?.labels));
  if (!services.length) problems.push(`${key(doc)}: selects no rendered Service`);
  for (const e of doc.spec?.endpoints ?? []) {
    if (!services.some((s) => (s.spec?.ports ?? []).some((p) => p.name === e.port))) problems.push(`${key(doc)}: no selected Service has a port named ${e.port}`);
  }
}
for (const doc of docs.filter((d) => d.kind === "PodMonitor")) {
  const pods = docs.filter((d) => d.spec?.template && matches(doc.spec?.selector, d.spec.template.metadata?.labels));
  if (!pods.length) problems.push(`${key(doc)}: selects no rendered pod template`);
  for (const e of doc.spec?.podMetricsEndpoints ?? []) {
    const named = pods.some((d) => (d.spec.template.spec?.containers ?? []).some((c) => (c.ports ?? []).some((p) => p.name === e.port)));
    if (!named) problems.push(`${key(doc)}: no selected container has a port named ${e.port}`);
  }
}

// A scheduler configuration inside a ConfigMap: the right kind, a profile with the expected name, extenders that
// reach a rendered Service.
let profiles = [];
for (const doc of docs.filter((d) => d.kind === "ConfigMap")) {
  for (const [file, text] of Object.entries(doc.data ?? {})) {
    let config;
    try {
      config = YAML.parse(text);
    } catch (e) {
      problems.push(`${key(doc)}: ${file} is not YAML: ${e.message}`);
      continue;
    }
    if (config?.kind !== "KubeSchedulerConfiguration") continue;
    if (config.apiVersion !== "kubescheduler.config.k8s.io/v1") problems.push(`${key(doc)}: ${file}: apiVersion ${config.apiVersion}`);
    profiles.push(...(config.profiles ?? []).map((p) => p.schedulerName));
    for (const e of config.extenders ?? []) {
      const m = /^https?:\/\/([^.]+)\.([^.]+)\.svc(?:\.cluster\.local)?:(\d+)/.exec(e.urlPrefix ?? "");
      if (!m || !has("Service", m[2], m[1])) problems.push(`${key(doc)}: ${file}: extender ${e.urlPrefix} is no rendered Service`);
      for (const verb of ["filterVerb", "prioritizeVerb", "bindVerb"]) if (!e[verb]) problems.push(`${key(doc)}: ${file}: no ${verb}`);
    }
  }
}
if (schedulerName && !profiles.includes(schedulerName)) problems.push(`no scheduler profile named ${schedulerName} (found: ${profiles})`);

for (const p of problems) console.error(`${rendered}: ${p}`);
console.log(`${rendered}: ${docs.length} objects, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
