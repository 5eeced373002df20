// See fake_api_objects.h.
#include "rackwise/testing/fake_api_objects.h"

#include <cctype>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rackwise::testing {

using Json = nlohmann::json;

absl::StatusOr<std::vector<FieldTerm>> ParseFieldSelector(absl::string_view text) {
  static const std::map<std::string, std::string, std::less<>> kFields = {
      {"spec.nodeName", "/spec/nodeName"},
      {"status.phase", "/status/phase"},
      {"metadata.name", "/metadata/name"},
      {"metadata.namespace", "/metadata/namespace"}};
  std::vector<FieldTerm> terms;
  for (absl::string_view term : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    size_t op = term.find("!=");
    size_t op_len = 2;
    const bool equal = op == absl::string_view::npos;
    if (equal) {
      op = term.find("==");
      if (op == absl::string_view::npos) {
        op = term.find('=');
        op_len = 1;
      }
    }
    if (op == absl::string_view::npos)
      return absl::InvalidArgumentError(absl::StrCat("fieldSelector term \"", term, "\" has no operator"));
    auto field = kFields.find(term.substr(0, op));
    if (field == kFields.end())
      return absl::InvalidArgumentError(absl::StrCat("field label not supported: ", term.substr(0, op)));
    terms.push_back({Json::json_pointer(field->second), equal, std::string(term.substr(op + op_len))});
  }
  return terms;
}

bool Selected(const Json& object, const std::vector<FieldTerm>& terms) {
  for (const FieldTerm& t : terms) {
    const bool has = object.contains(t.path) && object.at(t.path).is_string();
    if (((has ? object.at(t.path).get<std::string>() : "") == t.value) != t.equal) return false;
  }
  return true;
}

std::string StringAt(const Json& object, const char* pointer) {
  const Json::json_pointer path(pointer);
  if (!object.contains(path)) return "";
  const Json& v = object.at(path);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string CollectionOf(const Json& object) {
  const std::string api = StringAt(object, "/apiVersion");
  std::string kind = StringAt(object, "/kind");
  if (api.empty() || kind.empty()) return "";
  for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return absl::StrCat(api == "v1" ? "/api/" : "/apis/", api, "/", kind, "s");
}

std::string KeyOf(const Json& object) {
  const std::string name = StringAt(object, "/metadata/name");
  if (name.empty()) return "";
  const std::string ns = StringAt(object, "/metadata/namespace");
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return Json({{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", Json::object()},
               {"status", "Failure"},
               {"message", message},
               {"reason", reason},
               {"code", code}})
      .dump();
}

std::string GoneEvent(int64_t resource_version) {
  Json gone = {{"type", "ERROR"},
               {"object",
                {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"status", "Failure"},
                 {"message", absl::StrCat("too old resource version: ", resource_version)},
                 {"reason", "Expired"},
                 {"code", 410}}}};
  return gone.dump() + "\n";
}

int GpusOf(const Json& pod) {
  const Json::json_pointer containers("/spec/containers");
  if (!pod.contains(containers) || !pod.at(containers).is_array()) return 0;
  int total = 0;
  for (const Json& c : pod.at(containers)) {
    for (const char* kind : {"/resources/limits/nvidia.com~1gpu", "/resources/requests/nvidia.com~1gpu"}) {
      const Json::json_pointer path(kind);
      if (!c.contains(path)) continue;
      const Json& n = c.at(path);
      int count = 0;
      if (n.is_number_integer()) count = n.get<int>();
      if (n.is_string() && !absl::SimpleAtoi(n.get<std::string>(), &count)) count = 0;
      total += count;
      break;
    }
  }
  return total;
}

}  // namespace rackwise::testing
