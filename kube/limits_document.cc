// See limits_document.h.
#include "limits_document.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "json_fields.h"
#include "rackwise/power_bounds.h"

namespace rackwise::k8s {
namespace {

void AppendWatts(int64_t milliwatts, std::string* out) {
  // Milliwatts as watts with up to three decimals, exactly (no floating-point rounding on the way out).
  absl::StrAppend(out, milliwatts / 1000);
  if (int64_t rest = milliwatts % 1000; rest != 0) {
    std::string frac = absl::StrCat(1000 + rest).substr(1);
    while (frac.back() == '0') frac.pop_back();
    absl::StrAppend(out, ".", frac);
  }
}

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("limits document: ", where, ": ", what));
}

// A required non-empty string field.
absl::StatusOr<std::string> RequiredString(const Json& object, const char* key, absl::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return Bad(where, absl::StrCat("\"", key, "\" must be a string"));
  std::string value = it->get<std::string>();
  if (value.empty()) return Bad(where, absl::StrCat("\"", key, "\" is empty"));
  return value;
}

// A required watts-per-GPU field, within the core's bounds, as milliwatts.
absl::StatusOr<int64_t> RequiredWatts(const Json& object, const char* key, absl::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return Bad(where, absl::StrCat("\"", key, "\" must be a number"));
  const double watts = it->get<double>();
  if (!std::isfinite(watts) || watts < kMinWattsPerGpu || watts > kMaxWattsPerGpu) {
    return Bad(where, absl::StrCat("\"", key, "\" is ", it->dump(), ", outside ", kMinWattsPerGpu, "..",
                                   kMaxWattsPerGpu, " W"));
  }
  return std::llround(watts * 1000.0);
}

absl::StatusOr<SteeredPod> ParsePod(const Json& pod, absl::string_view where) {
  if (!pod.is_object()) return Bad(where, "a pod must be an object");
  SteeredPod out;
  for (auto [key, field] : {std::pair{"namespace", &out.namespace_}, std::pair{"name", &out.name},
                            std::pair{"uid", &out.uid}, std::pair{"node", &out.node}}) {
    absl::StatusOr<std::string> value = RequiredString(pod, key, where);
    if (!value.ok()) return value.status();
    *field = std::move(*value);
  }
  return out;
}

absl::StatusOr<SteeredLimit> ParseEntry(const Json& entry, size_t index) {
  const std::string where = absl::StrCat("allocations[", index, "]");
  if (!entry.is_object()) return Bad(where, "must be an object");
  SteeredLimit out;
  absl::StatusOr<std::string> id = RequiredString(entry, "allocation", where);
  if (!id.ok()) return id.status();
  out.allocation = std::move(*id);
  absl::StatusOr<int64_t> target = RequiredWatts(entry, "watts_per_gpu", where);
  if (!target.ok()) return target.status();
  absl::StatusOr<int64_t> declared = RequiredWatts(entry, "declared_watts_per_gpu", where);
  if (!declared.ok()) return declared.status();
  out.milliwatts_per_gpu = *target;
  out.declared_milliwatts_per_gpu = *declared;
  auto pods = entry.find("pods");
  if (pods == entry.end() || !pods->is_array()) return Bad(where, "\"pods\" must be an array");
  for (size_t p = 0; p < pods->size(); ++p) {
    absl::StatusOr<SteeredPod> pod = ParsePod((*pods)[p], absl::StrCat(where, ".pods[", p, "]"));
    if (!pod.ok()) return pod.status();
    out.pods.push_back(std::move(*pod));
  }
  return out;
}

}  // namespace

std::string EncodeLimitsDocument(const LimitsDocument& document) {
  std::string out = absl::StrCat("{\"generation\":", document.generation, ",\"allocations\":[");
  for (size_t i = 0; i < document.allocations.size(); ++i) {
    const SteeredLimit& a = document.allocations[i];
    if (i > 0) out.push_back(',');
    out += "{\"allocation\":";
    AppendJsonString(a.allocation, &out);
    out += ",\"watts_per_gpu\":";
    AppendWatts(a.milliwatts_per_gpu, &out);
    out += ",\"declared_watts_per_gpu\":";
    AppendWatts(a.declared_milliwatts_per_gpu, &out);
    out += ",\"pods\":[";
    for (size_t p = 0; p < a.pods.size(); ++p) {
      const SteeredPod& pod = a.pods[p];
      if (p > 0) out.push_back(',');
      for (auto [key, value] : {std::pair{"{\"namespace\":", &pod.namespace_}, std::pair{",\"name\":", &pod.name},
                                std::pair{",\"uid\":", &pod.uid}, std::pair{",\"node\":", &pod.node}}) {
        out += key;
        AppendJsonString(*value, &out);
      }
      out.push_back('}');
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

absl::StatusOr<LimitsDocument> ParseLimitsDocument(absl::string_view body) {
  absl::StatusOr<Json> json = ParseJsonObject(body);
  if (!json.ok()) return Bad("body", json.status().message());
  LimitsDocument out;
  auto generation = json->find("generation");
  if (generation == json->end() || !generation->is_number_unsigned()) {
    return Bad("body", "\"generation\" must be a non-negative integer");
  }
  out.generation = generation->get<uint64_t>();
  auto allocations = json->find("allocations");
  if (allocations == json->end() || !allocations->is_array()) return Bad("body", "\"allocations\" must be an array");
  for (size_t i = 0; i < allocations->size(); ++i) {
    absl::StatusOr<SteeredLimit> entry = ParseEntry((*allocations)[i], i);
    if (!entry.ok()) return entry.status();
    out.allocations.push_back(std::move(*entry));
  }
  return out;
}

LimitsDocument LimitsForNode(const LimitsDocument& document, absl::string_view node) {
  LimitsDocument out;
  out.generation = document.generation;
  for (const SteeredLimit& a : document.allocations) {
    SteeredLimit mine = a;
    std::erase_if(mine.pods, [&](const SteeredPod& p) { return p.node != node; });
    if (!mine.pods.empty()) out.allocations.push_back(std::move(mine));
  }
  return out;
}

}  // namespace rackwise::k8s
