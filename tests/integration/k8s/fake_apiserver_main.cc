// rackwise_test_fake_apiserver: the few kube-apiserver endpoints rackwise-extender uses (KubeClient, KubeSync),
// in memory, over plain HTTP on loopback, for tests/integration/slurm/test_one_budget.sh. Not a general fake:
//
//   GET  /api/v1/pods, /api/v1/nodes            LIST (all items in one page; `limit` is not honoured, so no
//                                               `continue`), metadata.resourceVersion set.
//   GET  ...?watch=1 (or watch=true)            a chunked WATCH from resourceVersion: one upstream event per line
//                                               ({"type":"ADDED|MODIFIED|DELETED|BOOKMARK","object":{...}}),
//                                               ended after timeoutSeconds. With a fieldSelector, an object that
//                                               enters the selection is ADDED and one that leaves it DELETED, as
//                                               the real server does. With allowWatchBookmarks, a BOOKMARK every
//                                               second of quiet (a dead client is found out at the next write).
//   POST /api/v1/namespaces/NS/pods/NAME/binding  sets spec.nodeName (MODIFIED); 404 unknown pod, 409 if bound
//                                               already or if metadata.uid names another pod.
//   fieldSelector terms: spec.nodeName, status.phase, metadata.name, metadata.namespace with = == !=.
//
//   GET  /apis/GROUP/VERSION/RESOURCE            LIST and WATCH, as for pods (no field selectors), of any other
//                                               collection: DRA objects (resourceclaims, resourceclaimtemplates,
//                                               resourceslices, deviceclasses), computedomains, podgroups,
//                                               workloads. Objects come from --objects and /_test/objects.
//   A watch from a resourceVersion older than the last /_test/compact gets an ERROR event with a 410 Status, as
//   after an etcd compaction; watches open at a compaction get one too.
//
// The test's own control surface (not Kubernetes API):
//   POST   /_test/pods           a pod (core/v1 JSON) created pending: ADDED; answers the stored object (201).
//   DELETE /_test/pods/NS/NAME   deletes it: DELETED.
//   GET    /_test/bound          one "NS/NAME UID NODE GPUS" line per bound pod, sorted (GPUS: the sum of the
//                                containers' nvidia.com/gpu limits, else requests).
//   POST   /_test/objects        an object of any other collection (apiVersion and kind say which: the resource
//                                is the kind in lower case plus "s"), created (ADDED) or replaced (MODIFIED).
//   POST   /_test/objects/delete the object named by the body's apiVersion, kind and metadata: DELETED.
//   POST   /_test/compact        older resourceVersions are gone (410) from now on.
//
// Nodes come from --nodes (all Ready, 8 allocatable GPUs); --objects FILE seeds the other collections from a JSON
// array of objects (as recorded from a real API server). Prints "listening on 127.0.0.1:PORT" once serving.
// Bad input answers 400 with a Status naming what is wrong. Events are kept for the life of the process (a
// test's worth), so a watch never gets 410.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using Json = nlohmann::json;

// A Status object as the API server answers errors, with the HTTP code set on the response.
void SendStatus(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
  res.status = code;
  Json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  res.set_content(status.dump(), "application/json");
}

std::string StringAt(const Json& object, const Json::json_pointer& path) {
  if (!object.contains(path)) return "";
  const Json& v = object.at(path);
  return v.is_string() ? v.get<std::string>() : "";
}

// One term of a field selector: field, operator and value.
struct FieldTerm {
  Json::json_pointer path;
  bool equal = true;
  std::string value;
};

// Parses "a=b,c!=d" over the fields kube-scheduler's and the extender's selectors use; nullopt (and *error) for
// anything else, as the real server refuses an unsupported field label.
std::optional<std::vector<FieldTerm>> ParseFieldSelector(const std::string& text, std::string* error) {
  static const std::map<std::string, std::string> kFields = {{"spec.nodeName", "/spec/nodeName"},
                                                             {"status.phase", "/status/phase"},
                                                             {"metadata.name", "/metadata/name"},
                                                             {"metadata.namespace", "/metadata/namespace"}};
  std::vector<FieldTerm> terms;
  std::stringstream in(text);
  for (std::string term; std::getline(in, term, ',');) {
    if (term.empty()) continue;
    size_t op = term.find("!=");
    size_t op_len = 2;
    bool equal = false;
    if (op == std::string::npos) {
      equal = true;
      op = term.find("==");
      if (op == std::string::npos) {
        op = term.find('=');
        op_len = 1;
      }
    }
    if (op == std::string::npos) {
      *error = "fieldSelector term \"" + term + "\" has no operator";
      return std::nullopt;
    }
    auto field = kFields.find(term.substr(0, op));
    if (field == kFields.end()) {
      *error = "field label not supported: " + term.substr(0, op);
      return std::nullopt;
    }
    terms.push_back({Json::json_pointer(field->second), equal, term.substr(op + op_len)});
  }
  return terms;
}

bool Selected(const Json& object, const std::vector<FieldTerm>& terms) {
  for (const FieldTerm& t : terms) {
    if ((StringAt(object, t.path) == t.value) != t.equal) return false;
  }
  return true;
}

int GpusOf(const Json& pod) {
  int total = 0;
  const Json::json_pointer containers("/spec/containers");
  if (!pod.contains(containers) || !pod.at(containers).is_array()) return 0;
  for (const Json& c : pod.at(containers)) {
    for (const char* kind : {"/resources/limits/nvidia.com~1gpu", "/resources/requests/nvidia.com~1gpu"}) {
      const std::string n = StringAt(c, Json::json_pointer(kind));
      if (!n.empty()) {
        total += std::atoi(n.c_str());
        break;
      }
    }
  }
  return total;
}

// A change of one object of `collection`: `before` null for a creation, `after` null for a deletion.
struct PodChange {
  int64_t rv = 0;
  Json before, after;
  std::string collection = "/api/v1/pods";
};

// The collection path of an object that is not a pod: /apis/<apiVersion>/<kind in lower case>s; "" if unknown.
std::string CollectionOf(const Json& object) {
  const std::string api = StringAt(object, Json::json_pointer("/apiVersion"));
  std::string kind = StringAt(object, Json::json_pointer("/kind"));
  if (api.find('/') == std::string::npos || kind.empty()) return "";
  for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "/apis/" + api + "/" + kind + "s";
}

std::string ObjectKeyOf(const Json& object) {
  std::string ns = StringAt(object, Json::json_pointer("/metadata/namespace"));
  return (ns.empty() ? "" : ns + "/") + StringAt(object, Json::json_pointer("/metadata/name"));
}

class FakeApiServer {
 public:
  explicit FakeApiServer(std::vector<std::string> nodes) : nodes_(std::move(nodes)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(64); };  // every watch holds a thread
    server_.Get("/api/v1/pods", [this](const httplib::Request& q, httplib::Response& r) { Pods(q, r); });
    server_.Get("/api/v1/nodes", [this](const httplib::Request& q, httplib::Response& r) { Nodes(q, r); });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
                 [this](const httplib::Request& q, httplib::Response& r) { Bind(q, r); });
    server_.Post("/_test/pods", [this](const httplib::Request& q, httplib::Response& r) { Create(q, r); });
    server_.Delete(R"(/_test/pods/([^/]+)/([^/]+))",
                   [this](const httplib::Request& q, httplib::Response& r) { Delete(q, r); });
    server_.Get("/_test/bound", [this](const httplib::Request& q, httplib::Response& r) { Bound(q, r); });
    server_.Get(R"(/apis/[^/]+/[^/]+/[^/]+)",
                [this](const httplib::Request& q, httplib::Response& r) { Objects(q, r); });
    server_.Post("/_test/objects", [this](const httplib::Request& q, httplib::Response& r) { Upsert(q, r, false); });
    server_.Post("/_test/objects/delete",
                 [this](const httplib::Request& q, httplib::Response& r) { Upsert(q, r, true); });
    server_.Post("/_test/compact", [this](const httplib::Request&, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      compacted_rv_ = ++rv_;
      changed_.notify_all();
      r.set_content("{}", "application/json");
    });
  }

  // Seeds the other collections (before Run). False with *error for an object without a collection.
  bool Seed(const Json& objects, std::string* error) {
    if (!objects.is_array()) {
      *error = "--objects: expected a JSON array of objects";
      return false;
    }
    for (const Json& o : objects) {
      const std::string collection = CollectionOf(o);
      if (collection.empty() || ObjectKeyOf(o).empty()) {
        *error = "--objects: an object needs apiVersion GROUP/VERSION, kind and metadata.name: " + o.dump();
        return false;
      }
      Json stamped = o;
      stamped["metadata"]["resourceVersion"] = std::to_string(rv_);
      objects_[collection][ObjectKeyOf(o)] = std::move(stamped);
    }
    return true;
  }

  int Run(int port) {
    const int bound = port == 0 ? server_.bind_to_any_port("127.0.0.1") : port;
    if (bound <= 0 || (port != 0 && !server_.bind_to_port("127.0.0.1", port))) {
      std::fprintf(stderr, "cannot listen on 127.0.0.1:%d\n", port);
      return 1;
    }
    std::printf("listening on 127.0.0.1:%d\n", bound);
    std::fflush(stdout);
    return server_.listen_after_bind() ? 0 : 1;
  }

 private:
  // Stamps a new resourceVersion on `after` (or on the deleted object) and records the change. Under mu_.
  void RecordLocked(Json before, Json after, const std::string& collection = "/api/v1/pods") {
    PodChange change{++rv_, std::move(before), std::move(after), collection};
    Json& stamped = change.after.is_null() ? change.before : change.after;
    stamped["metadata"]["resourceVersion"] = std::to_string(change.rv);
    changes_.push_back(std::move(change));
    changed_.notify_all();
  }

  void Pods(const httplib::Request& req, httplib::Response& res) {
    std::string error;
    std::optional<std::vector<FieldTerm>> terms = ParseFieldSelector(req.get_param_value("fieldSelector"), &error);
    if (!terms) return SendStatus(res, 400, "BadRequest", error);
    if (IsWatch(req)) return Watch(req, res, *terms, "/api/v1/pods");
    std::lock_guard<std::mutex> lock(mu_);
    Json items = Json::array();
    for (const auto& [key, pod] : pods_) {
      if (Selected(pod, *terms)) items.push_back(pod);
    }
    res.set_content(ListOf("PodList", std::move(items)).dump(), "application/json");
  }

  void Nodes(const httplib::Request& req, httplib::Response& res) {
    if (IsWatch(req)) return Watch(req, res, {}, "/api/v1/nodes");  // nodes never change here
    Json items = Json::array();
    for (const std::string& name : nodes_) {
      items.push_back(
          {{"kind", "Node"},
           {"apiVersion", "v1"},
           {"metadata", {{"name", name}, {"resourceVersion", "1"}, {"labels", {{"kubernetes.io/hostname", name}}}}},
           {"spec", Json::object()},
           {"status",
            {{"allocatable", {{"nvidia.com/gpu", "8"}}},
             {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
    }
    std::lock_guard<std::mutex> lock(mu_);
    res.set_content(ListOf("NodeList", std::move(items)).dump(), "application/json");
  }

  static bool IsWatch(const httplib::Request& req) {
    const std::string w = req.get_param_value("watch");
    return w == "1" || w == "true";
  }

  Json ListOf(const char* kind, Json items) const {
    return {{"kind", kind},
            {"apiVersion", "v1"},
            {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
            {"items", std::move(items)}};
  }

  // A chunked watch from resourceVersion (empty or "0": from now) until timeoutSeconds (default and at most 300).
  void Watch(const httplib::Request& req, httplib::Response& res, std::vector<FieldTerm> terms,
             const std::string& collection) {
    int64_t from = 0;
    const std::string rv = req.get_param_value("resourceVersion");
    int timeout_s = 300;
    try {
      if (!rv.empty()) from = std::stoll(rv);
      if (req.has_param("timeoutSeconds"))
        timeout_s = std::clamp(std::stoi(req.get_param_value("timeoutSeconds")), 1, 300);
    } catch (const std::exception&) {
      return SendStatus(res, 400, "BadRequest", "resourceVersion and timeoutSeconds must be integers");
    }
    int64_t compacted = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (from == 0) from = rv_;
      compacted = compacted_rv_;
    }
    if (from < compacted) return SendGoneEvent(res, from);
    const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    auto cursor = std::make_shared<int64_t>(from);
    res.set_chunked_content_provider("application/json", [this, cursor, until, bookmarks, terms = std::move(terms),
                                                          collection, compacted](size_t, httplib::DataSink& sink) {
      if (std::chrono::steady_clock::now() >= until) {
        sink.done();
        return true;
      }
      if (CompactedSince(compacted)) {  // a compaction while the watch is open: its history is gone
        const std::string gone = GoneEvent(*cursor);
        sink.write(gone.data(), gone.size());
        sink.done();
        return true;
      }
      std::string lines = NextEvents(cursor.get(), terms, collection);
      if (lines.empty() && bookmarks) {
        Json mark = {{"type", "BOOKMARK"},
                     {"object",
                      {{"kind", collection == "/api/v1/pods" ? "Pod" : "Object"},
                       {"apiVersion", "v1"},
                       {"metadata", {{"resourceVersion", std::to_string(*cursor)}}}}}};
        lines = mark.dump() + "\n";
      }
      if (lines.empty()) return true;
      return sink.write(lines.data(), lines.size());  // false: the client has gone
    });
  }

  bool CompactedSince(int64_t compacted) {
    std::lock_guard<std::mutex> lock(mu_);
    return compacted_rv_ > compacted;
  }
  static std::string GoneEvent(int64_t rv) {
    Json gone = {{"type", "ERROR"},
                 {"object",
                  {{"kind", "Status"},
                   {"apiVersion", "v1"},
                   {"status", "Failure"},
                   {"message", "too old resource version: " + std::to_string(rv)},
                   {"reason", "Expired"},
                   {"code", 410}}}};
    return gone.dump() + "\n";
  }
  static void SendGoneEvent(httplib::Response& res, int64_t rv) { res.set_content(GoneEvent(rv), "application/json"); }

  // The events of `collection` after *cursor as watch lines (waits up to a second for one), advancing *cursor.
  // Nodes have none: a second's wait.
  std::string NextEvents(int64_t* cursor, const std::vector<FieldTerm>& terms, const std::string& collection) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(1), [&] { return rv_ > *cursor; });
    std::string out;
    for (const PodChange& c : changes_) {  // a test's worth of changes: a scan is cheap
      if (c.rv <= *cursor) continue;
      *cursor = c.rv;
      if (c.collection != collection) continue;
      const bool was = !c.before.is_null() && Selected(c.before, terms);
      const bool is = !c.after.is_null() && Selected(c.after, terms);
      const char* type = is ? (was ? "MODIFIED" : "ADDED") : (was ? "DELETED" : nullptr);
      if (type == nullptr) continue;
      Json object = c.after.is_null() ? c.before : c.after;
      object["metadata"]["resourceVersion"] = std::to_string(c.rv);
      out += Json({{"type", type}, {"object", std::move(object)}}).dump() + "\n";
    }
    return out;
  }

  // LIST or WATCH of a collection other than pods and nodes.
  void Objects(const httplib::Request& req, httplib::Response& res) {
    if (IsWatch(req)) return Watch(req, res, {}, req.path);
    std::lock_guard<std::mutex> lock(mu_);
    Json items = Json::array();
    for (const auto& [key, object] : objects_[req.path]) items.push_back(object);
    res.set_content(ListOf("List", std::move(items)).dump(), "application/json");
  }

  // Creates or replaces (or, with `remove`, deletes) the object in the body.
  void Upsert(const httplib::Request& req, httplib::Response& res, bool remove) {
    Json object = Json::parse(req.body, nullptr, false);
    const std::string collection = object.is_object() ? CollectionOf(object) : "";
    if (collection.empty() || ObjectKeyOf(object).empty())
      return SendStatus(res, 400, "BadRequest", "an object needs apiVersion GROUP/VERSION, kind and metadata.name");
    std::lock_guard<std::mutex> lock(mu_);
    auto& objects = objects_[collection];
    const std::string key = ObjectKeyOf(object);
    auto it = objects.find(key);
    if (remove) {
      if (it == objects.end()) return SendStatus(res, 404, "NotFound", key + " not found");
      RecordLocked(std::move(it->second), nullptr, collection);
      objects.erase(it);
      res.set_content(changes_.back().before.dump(), "application/json");
      return;
    }
    RecordLocked(it == objects.end() ? Json() : it->second, std::move(object), collection);
    objects[key] = changes_.back().after;
    res.set_content(objects[key].dump(), "application/json");
  }

  void Bind(const httplib::Request& req, httplib::Response& res) {
    const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
    Json binding = Json::parse(req.body, nullptr, false);
    const std::string node = binding.is_object() ? StringAt(binding, Json::json_pointer("/target/name")) : "";
    if (node.empty()) return SendStatus(res, 400, "BadRequest", "a Binding with target.name is required");
    if (std::find(nodes_.begin(), nodes_.end(), node) == nodes_.end())
      return SendStatus(res, 400, "BadRequest", "node " + node + " does not exist");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return SendStatus(res, 404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found");
    const std::string uid = StringAt(binding, Json::json_pointer("/metadata/uid"));
    if (!uid.empty() && uid != StringAt(it->second, Json::json_pointer("/metadata/uid")))
      return SendStatus(res, 409, "Conflict", "Precondition failed: UID in precondition: " + uid);
    if (const std::string on = StringAt(it->second, Json::json_pointer("/spec/nodeName")); !on.empty())
      return SendStatus(res, 409, "Conflict", "pod " + key + " is already assigned to node \"" + on + "\"");
    Json before = it->second;
    it->second["spec"]["nodeName"] = node;
    RecordLocked(std::move(before), it->second);
    it->second = changes_.back().after;
    res.status = 201;
    res.set_content(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})",
                    "application/json");
  }

  void Create(const httplib::Request& req, httplib::Response& res) {
    Json pod = Json::parse(req.body, nullptr, false);
    if (!pod.is_object()) return SendStatus(res, 400, "BadRequest", "the body is not a JSON object");
    const std::string name = StringAt(pod, Json::json_pointer("/metadata/name"));
    std::string ns = StringAt(pod, Json::json_pointer("/metadata/namespace"));
    if (name.empty() || name.find('/') != std::string::npos || ns.find('/') != std::string::npos)
      return SendStatus(res, 400, "BadRequest", "metadata.name is required; names hold no '/'");
    if (!StringAt(pod, Json::json_pointer("/spec/nodeName")).empty())
      return SendStatus(res, 400, "BadRequest", "create pods pending: spec.nodeName is set by a binding");
    if (ns.empty()) ns = "default";
    std::lock_guard<std::mutex> lock(mu_);
    const std::string key = ns + "/" + name;
    if (pods_.contains(key)) return SendStatus(res, 409, "AlreadyExists", "pods \"" + name + "\" already exists");
    pod["kind"] = "Pod";
    pod["apiVersion"] = "v1";
    pod["metadata"]["namespace"] = ns;
    if (StringAt(pod, Json::json_pointer("/metadata/uid")).empty())
      pod["metadata"]["uid"] = "uid-" + std::to_string(rv_ + 1) + "-" + ns + "-" + name;
    if (StringAt(pod, Json::json_pointer("/status/phase")).empty()) pod["status"]["phase"] = "Pending";
    RecordLocked(nullptr, std::move(pod));
    pods_[key] = changes_.back().after;
    res.status = 201;
    res.set_content(pods_[key].dump(), "application/json");
  }

  void Delete(const httplib::Request& req, httplib::Response& res) {
    const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return SendStatus(res, 404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found");
    RecordLocked(std::move(it->second), nullptr);
    pods_.erase(it);
    res.set_content(changes_.back().before.dump(), "application/json");
  }

  void Bound(const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& [key, pod] : pods_) {  // std::map: sorted by key
      const std::string node = StringAt(pod, Json::json_pointer("/spec/nodeName"));
      if (node.empty()) continue;
      out += key + " " + StringAt(pod, Json::json_pointer("/metadata/uid")) + " " + node + " " +
             std::to_string(GpusOf(pod)) + "\n";
    }
    res.set_content(out, "text/plain");
  }

  const std::vector<std::string> nodes_;
  httplib::Server server_;
  std::mutex mu_;
  std::condition_variable changed_;
  int64_t rv_ = 1;
  std::map<std::string, Json> pods_;                            // by "namespace/name"
  std::map<std::string, std::map<std::string, Json>> objects_;  // collection path -> "namespace/name" -> object
  std::vector<PodChange> changes_;
  int64_t compacted_rv_ = 0;  // watches from before this resourceVersion get 410
};

int Usage() {
  std::fprintf(stderr,
               "usage: rackwise_test_fake_apiserver --nodes NAME[,NAME...] [--port PORT (0: any)] [--objects FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> nodes;
  int port = 0;
  std::string objects_file;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    if (flag == "--nodes") {
      std::stringstream in(argv[i + 1]);
      for (std::string n; std::getline(in, n, ',');)
        if (!n.empty()) nodes.push_back(n);
    } else if (flag == "--objects") {
      objects_file = argv[i + 1];
    } else if (flag == "--port") {
      port = std::atoi(argv[i + 1]);
      if (port < 0 || port > 65535) return Usage();
    } else {
      return Usage();
    }
  }
  if (nodes.empty()) return Usage();
  signal(SIGPIPE, SIG_IGN);  // a watch client that died: the write fails, the stream ends
  FakeApiServer server(std::move(nodes));
  if (!objects_file.empty()) {
    std::ifstream in(objects_file);
    Json objects = Json::parse(in, nullptr, false);
    std::string error;
    if (!in || !server.Seed(objects, &error)) {
      std::fprintf(stderr, "%s: %s\n", objects_file.c_str(), error.empty() ? "cannot read JSON" : error.c_str());
      return 2;
    }
  }
  return server.Run(port);
}
