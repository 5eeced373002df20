// See fake_api_server.h: the writes to the fake's state (pods, other objects, bindings, evictions, compaction),
// each recorded as a change that watches see.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "rackwise/testing/fake_api_server.h"

namespace rackwise::testing {
namespace {

using Json = nlohmann::json;
constexpr char kPods[] = "/api/v1/pods";
constexpr char kNodes[] = "/api/v1/nodes";

// The Status an API server answers a successful binding or eviction with.
void SendCreated(httplib::Response& res) {
  res.status = 201;
  res.set_content(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})",
                  "application/json");
}

}  // namespace

Json FakeApiServer::ChangeLocked(const std::string& collection, const std::string& key, Json after) {
  std::map<std::string, Json>& objects = collections_[collection];
  auto it = objects.find(key);
  Change change{++rv_, it == objects.end() ? Json() : it->second, std::move(after), collection};
  Json& stamped = change.after.is_null() ? change.before : change.after;
  stamped["metadata"]["resourceVersion"] = std::to_string(change.rv);
  Json answer = stamped;
  if (change.after.is_null()) {
    objects.erase(key);
  } else {
    objects[key] = change.after;
  }
  changes_.push_back(std::move(change));
  changed_.notify_all();
  return answer;
}

const Json* FakeApiServer::FindLocked(const std::string& collection, const std::string& key) const {
  auto c = collections_.find(collection);
  if (c == collections_.end()) return nullptr;
  auto it = c->second.find(key);
  return it == c->second.end() ? nullptr : &it->second;
}

absl::StatusOr<Json> FakeApiServer::PutPodLocked(Json pod, bool create_only) {
  const std::string name = pod.is_object() ? StringAt(pod, "/metadata/name") : "";
  std::string ns = pod.is_object() ? StringAt(pod, "/metadata/namespace") : "";
  if (name.empty() || name.find('/') != std::string::npos || ns.find('/') != std::string::npos)
    return absl::InvalidArgumentError("metadata.name is required; names hold no '/'");
  if (ns.empty()) ns = "default";
  const std::string key = absl::StrCat(ns, "/", name);
  if (create_only && FindLocked(kPods, key) != nullptr)
    return absl::AlreadyExistsError(absl::StrCat("pods \"", name, "\" already exists"));
  pod["kind"] = "Pod";
  pod["apiVersion"] = "v1";
  pod["metadata"]["namespace"] = ns;
  if (StringAt(pod, "/metadata/uid").empty())
    pod["metadata"]["uid"] = absl::StrCat("uid-", rv_ + 1, "-", ns, "-", name);
  if (StringAt(pod, "/status/phase").empty()) pod["status"]["phase"] = "Pending";
  return ChangeLocked(kPods, key, std::move(pod));
}

absl::StatusOr<Json> FakeApiServer::CreatePod(Json pod) {
  std::lock_guard<std::mutex> lock(mu_);
  return PutPodLocked(std::move(pod), /*create_only=*/true);
}

absl::StatusOr<Json> FakeApiServer::PutPod(Json pod) {
  std::lock_guard<std::mutex> lock(mu_);
  return PutPodLocked(std::move(pod), /*create_only=*/false);
}

absl::Status FakeApiServer::ReplacePods(std::vector<Json> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> kept;
  for (Json& pod : pods) {
    absl::StatusOr<Json> stored = PutPodLocked(std::move(pod), /*create_only=*/false);
    if (!stored.ok()) return stored.status();
    kept.insert(KeyOf(*stored));
  }
  std::vector<std::string> gone;
  for (const auto& [key, pod] : collections_[kPods]) {
    if (!kept.contains(key)) gone.push_back(key);
  }
  for (const std::string& key : gone) ChangeLocked(kPods, key, nullptr);
  return absl::OkStatus();
}

absl::StatusOr<Json> FakeApiServer::DeletePod(const std::string& pod_namespace, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = absl::StrCat(pod_namespace, "/", name);
  if (FindLocked(kPods, key) == nullptr) return absl::NotFoundError(absl::StrCat("pods \"", name, "\" not found"));
  return ChangeLocked(kPods, key, nullptr);
}

absl::StatusOr<Json> FakeApiServer::PutObject(Json object) {
  const std::string collection = object.is_object() ? CollectionOf(object) : "";
  if (collection.empty() || KeyOf(object).empty())
    return absl::InvalidArgumentError("an object needs apiVersion, kind and metadata.name");
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = KeyOf(object);
  return ChangeLocked(collection, key, std::move(object));
}

absl::StatusOr<Json> FakeApiServer::DeleteObject(const Json& object) {
  const std::string collection = object.is_object() ? CollectionOf(object) : "";
  const std::string key = object.is_object() ? KeyOf(object) : "";
  if (collection.empty() || key.empty())
    return absl::InvalidArgumentError("an object needs apiVersion, kind and metadata.name");
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(collection, key) == nullptr) return absl::NotFoundError(key + " not found");
  return ChangeLocked(collection, key, nullptr);
}

absl::Status FakeApiServer::SeedObjects(const Json& objects) {
  if (!objects.is_array()) return absl::InvalidArgumentError("expected a JSON array of objects");
  for (const Json& o : objects) {
    absl::StatusOr<Json> put = PutObject(o);
    if (!put.ok()) return absl::InvalidArgumentError(absl::StrCat(put.status().message(), ": ", o.dump()));
  }
  return absl::OkStatus();
}

std::vector<std::string> FakeApiServer::BoundPods() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto pods = collections_.find(kPods);
  if (pods == collections_.end()) return out;
  for (const auto& [key, pod] : pods->second) {  // std::map: sorted by key
    const std::string node = StringAt(pod, "/spec/nodeName");
    if (!node.empty())
      out.push_back(absl::StrCat(key, " ", StringAt(pod, "/metadata/uid"), " ", node, " ", GpusOf(pod)));
  }
  return out;
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = ++rv_;
  changed_.notify_all();
}

void FakeApiServer::Bind(const httplib::Request& req, httplib::Response& res, const std::smatch& pod_path) {
  const std::string name = pod_path[2].str();
  const std::string key = absl::StrCat(pod_path[1].str(), "/", name);
  const Json binding = Json::parse(req.body, nullptr, false);
  const std::string node = binding.is_object() ? StringAt(binding, "/target/name") : "";
  if (node.empty()) return SendStatus(res, 400, "BadRequest", "a Binding with target.name is required");
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(kNodes, node) == nullptr)
    return SendStatus(res, 400, "BadRequest", absl::StrCat("node ", node, " does not exist"));
  const Json* pod = FindLocked(kPods, key);
  if (pod == nullptr) return SendStatus(res, 404, "NotFound", absl::StrCat("pods \"", name, "\" not found"));
  const std::string uid = StringAt(binding, "/metadata/uid");
  if (!uid.empty() && uid != StringAt(*pod, "/metadata/uid"))
    return SendStatus(res, 409, "Conflict", "Precondition failed: UID in precondition: " + uid);
  if (const std::string on = StringAt(*pod, "/spec/nodeName"); !on.empty())
    return SendStatus(res, 409, "Conflict", absl::StrCat("pod ", key, " is already assigned to node \"", on, "\""));
  Json bound = *pod;
  bound["spec"]["nodeName"] = node;
  ChangeLocked(kPods, key, std::move(bound));
  SendCreated(res);
}

void FakeApiServer::Evict(const httplib::Request& req, httplib::Response& res, const std::smatch& pod_path) {
  const std::string name = pod_path[2].str();
  const std::string key = absl::StrCat(pod_path[1].str(), "/", name);
  if (!Json::parse(req.body, nullptr, false).is_object())
    return SendStatus(res, 400, "BadRequest", "an Eviction object is required");
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(kPods, key) == nullptr)
    return SendStatus(res, 404, "NotFound", absl::StrCat("pods \"", name, "\" not found"));
  ChangeLocked(kPods, key, nullptr);
  SendCreated(res);
}

}  // namespace rackwise::testing
