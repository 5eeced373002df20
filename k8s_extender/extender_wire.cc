// Decoding and encoding of the extender verbs' bodies. Requests go through nlohmann-json's DOM (with the Go
// field-matching rules of json_fields.h); answers are written by hand, which is several times faster for
// the 5,000-name lists a large cluster sends.
#include "extender_wire.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "args_scanner.h"

namespace rackwise::k8s {
namespace {

absl::StatusOr<Json> PodField(const Json& root) {
  const Json* pod = FindField(root, "Pod");
  if (pod == nullptr) return Json::object();
  if (!pod->is_object()) return absl::InvalidArgumentError("Pod: expected an object");
  return *pod;
}

absl::StatusOr<std::string> RequiredString(const Json& root, absl::string_view field) {
  const Json* v = FindField(root, field);
  if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat(field, ": missing"));
  if (!v->is_string()) return absl::InvalidArgumentError(absl::StrCat(field, ": expected a string"));
  std::string s = v->get<std::string>();
  if (s.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  return s;
}

void AppendFailures(absl::string_view key, const std::vector<FilterResult::Failure>& failures,
                    const std::vector<std::string>& reasons_json, const CandidateNodes& candidates, std::string* out) {
  AppendJsonString(key, out);
  out->push_back(':');
  if (failures.empty()) {
    out->append("null");
    return;
  }
  out->push_back('{');
  for (size_t i = 0; i < failures.size(); ++i) {
    if (i) out->push_back(',');
    absl::string_view name = candidates.json(failures[i].candidate);
    out->append(name.data(), name.size());
    out->push_back(':');
    out->append(reasons_json[failures[i].reason]);
  }
  out->push_back('}');
}

const CandidateNodes& NoCandidates() {
  static const CandidateNodes* none = new CandidateNodes();
  return *none;
}

}  // namespace

const CandidateNodes& ExtenderArgs::candidate_nodes() const { return candidates ? *candidates : NoCandidates(); }

void ExtenderArgs::SetNodeNames(std::vector<std::string> names) {
  has_node_names = true;
  candidates = std::make_shared<const CandidateNodes>(std::move(names));
}

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body, CandidateNodeCache* cache) {
  internal::TopLevelArgs top;
  if (absl::Status s = internal::ScanExtenderArgs(body, cache, &top); !s.ok()) return s;
  ExtenderArgs args;
  if (!top.pod.is_null()) {
    if (!top.pod.is_object()) return absl::InvalidArgumentError("Pod: expected an object");
    args.pod = std::move(top.pod);
  }
  args.has_node_names = top.has_node_names;
  args.candidates = std::move(top.node_names);
  if (!top.nodes.is_null()) {
    const Json& nodes = top.nodes;
    if (!nodes.is_object()) return absl::InvalidArgumentError("Nodes: expected a NodeList object");
    const Json* items = FindField(nodes, "items");
    if (items != nullptr && !items->is_array()) return absl::InvalidArgumentError("Nodes.items: expected an array");
    std::vector<std::string> names;
    if (items != nullptr) {
      for (size_t i = 0; i < items->size(); ++i) {
        const Json* meta = FindField((*items)[i], "metadata");
        std::string name = meta != nullptr ? StringField(*meta, "name") : "";
        if (name.empty()) {
          return absl::InvalidArgumentError(absl::StrCat("Nodes.items[", i, "].metadata.name: missing"));
        }
        names.push_back(std::move(name));
      }
    }
    args.has_nodes = true;
    args.nodes = std::move(top.nodes);
    if (!args.has_node_names) args.candidates = std::make_shared<const CandidateNodes>(std::move(names));
  }
  return args;
}

uint32_t FilterResult::AddReason(std::string text) {
  reasons.push_back(std::move(text));
  return static_cast<uint32_t>(reasons.size() - 1);
}

std::string EncodeFilterResult(const FilterResult& result, const ExtenderArgs& args) {
  const CandidateNodes& candidates = args.candidate_nodes();
  std::string out;
  out.reserve(128 + candidates.size() * 24);
  out.append("{\"Nodes\":");
  if (args.has_nodes && !args.has_node_names) {
    // A NodeList holding only the feasible items, in their original order (candidate i is items[i]). Written
    // field by field: copying the list first would double the memory of a large request.
    const Json* in = FindField(args.nodes, "items");
    auto dump = [&out](const Json& v) { out.append(v.dump(-1, ' ', false, Json::error_handler_t::replace)); };
    out.push_back('{');
    bool first = true;
    for (auto it = args.nodes.begin(); it != args.nodes.end(); ++it) {
      if (&it.value() == in) continue;
      if (!first) out.push_back(',');
      first = false;
      AppendJsonString(it.key(), &out);
      out.push_back(':');
      dump(it.value());
    }
    out.append(first ? "\"items\":[" : ",\"items\":[");
    for (size_t i = 0; in != nullptr && i < result.feasible.size(); ++i) {
      if (result.feasible[i] >= in->size()) continue;
      if (out.back() != '[') out.push_back(',');
      dump((*in)[result.feasible[i]]);
    }
    out.append("]},\"NodeNames\":null");
  } else {
    out.append("null,\"NodeNames\":");
    if (!args.has_node_names && !args.has_nodes) {
      out.append("null");
    } else {
      out.push_back('[');
      for (size_t i = 0; i < result.feasible.size(); ++i) {
        if (i) out.push_back(',');
        absl::string_view name = candidates.json(result.feasible[i]);
        out.append(name.data(), name.size());
      }
      out.push_back(']');
    }
  }
  std::vector<std::string> reasons_json(result.reasons.size());
  for (size_t r = 0; r < reasons_json.size(); ++r) AppendJsonString(result.reasons[r], &reasons_json[r]);
  out.push_back(',');
  AppendFailures("FailedNodes", result.failed, reasons_json, candidates, &out);
  out.push_back(',');
  AppendFailures("FailedAndUnresolvableNodes", result.unresolvable, reasons_json, candidates, &out);
  out.append(",\"Error\":");
  AppendJsonString(result.error, &out);
  out.push_back('}');
  return out;
}

std::vector<std::string> FeasibleNames(const FilterResult& result, const ExtenderArgs& args) {
  std::vector<std::string> names;
  for (uint32_t k : result.feasible) names.push_back(args.candidate_nodes().name(k));
  return names;
}

std::string EncodeFilterError(absl::string_view error) {
  std::string out =
      "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":";
  AppendJsonString(error, &out);
  out.push_back('}');
  return out;
}

std::string EncodeHostPriorityList(const CandidateNodes& candidates, const std::vector<int>& scores) {
  std::string out;
  out.reserve(2 + candidates.size() * 40);
  out.push_back('[');
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i) out.push_back(',');
    out.append("{\"Host\":");
    absl::string_view name = candidates.json(i);
    out.append(name.data(), name.size());
    out.append(",\"Score\":");
    const int score = i < scores.size() ? scores[i] : 0;
    if (score >= 0 && score <= 9) {
      out.push_back(static_cast<char>('0' + score));
    } else {
      out.append(std::to_string(score));
    }
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

absl::StatusOr<BindingArgs> ParseBindingArgs(absl::string_view body) {
  absl::StatusOr<Json> root = ParseJsonObject(body);
  if (!root.ok()) return root.status();
  BindingArgs args;
  absl::StatusOr<std::string> name = RequiredString(*root, "PodName");
  if (!name.ok()) return name.status();
  absl::StatusOr<std::string> node = RequiredString(*root, "Node");
  if (!node.ok()) return node.status();
  args.pod_name = std::move(*name);
  args.node = std::move(*node);
  args.pod_namespace = StringField(*root, "PodNamespace");
  if (args.pod_namespace.empty()) args.pod_namespace = "default";
  args.pod_uid = StringField(*root, "PodUID");
  return args;
}

std::string EncodeBindingResult(absl::string_view error) {
  std::string out = "{\"Error\":";
  AppendJsonString(error, &out);
  out.push_back('}');
  return out;
}

absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(absl::string_view body) {
  absl::StatusOr<Json> root = ParseJsonObject(body);
  if (!root.ok()) return root.status();
  PreemptionArgs args;
  absl::StatusOr<Json> pod = PodField(*root);
  if (!pod.ok()) return pod.status();
  args.pod = std::move(*pod);
  auto read_map = [&](absl::string_view field, bool meta) -> absl::Status {
    const Json* m = FindField(*root, field);
    if (m == nullptr) return absl::OkStatus();
    if (!m->is_object()) return absl::InvalidArgumentError(absl::StrCat(field, ": expected an object"));
    for (auto it = m->begin(); it != m->end(); ++it) {
      MetaVictims& v = args.victims[it.key()];
      if (it->is_null()) continue;
      if (!it->is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".", it.key(), ": expected an object"));
      }
      if (const Json* n = FindField(*it, "NumPDBViolations"); n != nullptr) {
        if (!n->is_number_integer() || n->get<int64_t>() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".", it.key(), ".NumPDBViolations: expected a count, got ", n->dump()));
        }
        v.num_pdb_violations = n->get<int64_t>();
      }
      const Json* pods = FindField(*it, "Pods");
      if (pods == nullptr) continue;
      if (!pods->is_array()) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".", it.key(), ".Pods: expected an array"));
      }
      for (const Json& p : *pods) {
        // MetaPod is {"UID": ".."}; a full Pod carries metadata.uid.
        std::string uid = meta ? StringField(p, "UID") : [&] {
          const Json* md = FindField(p, "metadata");
          return md ? StringField(*md, "uid") : std::string();
        }();
        if (uid.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(field, ".", it.key(), ".Pods: a victim without a UID"));
        }
        v.pod_uids.push_back(std::move(uid));
      }
    }
    return absl::OkStatus();
  };
  // Meta victims win: they are what upstream sends to node-cache-capable extenders.
  if (absl::Status s = read_map("NodeNameToVictims", false); !s.ok()) return s;
  if (FindField(*root, "NodeNameToMetaVictims") != nullptr) {
    args.victims.clear();
    if (absl::Status s = read_map("NodeNameToMetaVictims", true); !s.ok()) return s;
  }
  return args;
}

std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims) {
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(node, &out);
    out.append(":{\"Pods\":[");
    for (size_t i = 0; i < v.pod_uids.size(); ++i) {
      if (i) out.push_back(',');
      out.append("{\"UID\":");
      AppendJsonString(v.pod_uids[i], &out);
      out.push_back('}');
    }
    out.append("],\"NumPDBViolations\":");
    out.append(std::to_string(v.num_pdb_violations));
    out.push_back('}');
  }
  out.append("}}");
  return out;
}

}  // namespace rackwise::k8s
