// What the fake API server (fake_api_server.h) knows of Kubernetes objects, apart from any server: the fields a
// field selector may name and whether an object is selected, the collection and key of an object, the Status
// and watch-event bodies the API server answers errors with, and the GPUs a pod asks for.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rackwise::testing {

// One term of a field selector: field, operator and value.
struct FieldTerm {
  nlohmann::json::json_pointer path;
  bool equal = true;
  std::string value;
};

// Parses "a=b,c!=d" over spec.nodeName, status.phase, metadata.name and metadata.namespace (the fields
// kube-scheduler's, the extender's and the node agent's selectors use); InvalidArgument for anything else, as the
// real server refuses an unsupported field label.
absl::StatusOr<std::vector<FieldTerm>> ParseFieldSelector(absl::string_view text);
bool Selected(const nlohmann::json& object, const std::vector<FieldTerm>& terms);

// The string at JSON pointer `pointer` ("/metadata/name"); "" when absent or not a string.
std::string StringAt(const nlohmann::json& object, const char* pointer);
// The collection path of an object: /api/v1/<kind>s for apiVersion v1, /apis/<apiVersion>/<kind>s for
// GROUP/VERSION (the kind in lower case); "" without apiVersion or kind.
std::string CollectionOf(const nlohmann::json& object);
// "namespace/name", or "name" for an object without a namespace; "" without a name.
std::string KeyOf(const nlohmann::json& object);
// A Status object as the API server answers errors.
std::string StatusBody(int code, const std::string& reason, const std::string& message);
// The watch line of an ERROR event carrying a 410 Expired Status: "too old resource version: <rv>".
std::string GoneEvent(int64_t resource_version);
// The sum of a pod's containers' nvidia.com/gpu limits (else requests).
int GpusOf(const nlohmann::json& pod);

}  // namespace rackwise::testing
