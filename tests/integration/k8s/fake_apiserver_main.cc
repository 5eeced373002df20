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
// The test's own control surface (not Kubernetes API):
//   POST   /_test/pods           a pod (core/v1 JSON) created pending: ADDED; answers the stored object (201).
//   DELETE /_test/pods/NS/NAME   deletes it: DELETED.
//   GET    /_test/bound          one "NS/NAME UID NODE GPUS" line per bound pod, sorted (GPUS: the sum of the
//                                containers' nvidia.com/gpu limits, else requests).
//
// Nodes come from --nodes (all Ready, 8 allocatable GPUs). Prints "listening on 127.0.0.1:PORT" once serving.
// Bad input answers 400 with a Status naming what is wrong. Events are kept for the life of the process (a
// test's worth), so a watch never gets 410.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
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

// A change of one pod: `before` null for a creation, `after` null for a deletion.
struct PodChange {
  int64_t rv = 0;
  Json before, after;
};

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
  void RecordLocked(Json before, Json after) {
    PodChange change{++rv_, std::move(before), std::move(after)};
    Json& stamped = change.after.is_null() ? change.before : change.after;
    stamped["metadata"]["resourceVersion"] = std::to_string(change.rv);
    changes_.push_back(std::move(change));
    changed_.notify_all();
  }

  void Pods(const httplib::Request& req, httplib::Response& res) {
    std::string error;
    std::optional<std::vector<FieldTerm>> terms = ParseFieldSelector(req.get_param_value("fieldSelector"), &error);
    if (!terms) return SendStatus(res, 400, "BadRequest", error);
    if (IsWatch(req)) return Watch(req, res, *terms, true);
    std::lock_guard<std::mutex> lock(mu_);
    Json items = Json::array();
    for (const auto& [key, pod] : pods_) {
      if (Selected(pod, *terms)) items.push_back(pod);
    }
    res.set_content(ListOf("PodList", std::move(items)).dump(), "application/json");
  }

  void Nodes(const httplib::Request& req, httplib::Response& res) {
    if (IsWatch(req)) return Watch(req, res, {}, false);  // nodes never change here
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
  void Watch(const httplib::Request& req, httplib::Response& res, std::vector<FieldTerm> terms, bool pods) {
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (from == 0) from = rv_;
    }
    const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    auto cursor = std::make_shared<int64_t>(from);
    res.set_chunked_content_provider("application/json", [this, cursor, until, bookmarks, terms = std::move(terms),
                                                          pods](size_t, httplib::DataSink& sink) {
      if (std::chrono::steady_clock::now() >= until) {
        sink.done();
        return true;
      }
      std::string lines = NextEvents(cursor.get(), terms, pods);
      if (lines.empty() && bookmarks) {
        Json mark = {{"type", "BOOKMARK"},
                     {"object",
                      {{"kind", pods ? "Pod" : "Node"},
                       {"apiVersion", "v1"},
                       {"metadata", {{"resourceVersion", std::to_string(*cursor)}}}}}};
        lines = mark.dump() + "\n";
      }
      if (lines.empty()) return true;
      return sink.write(lines.data(), lines.size());  // false: the client has gone
    });
  }

  // The pod events after *cursor as watch lines (waits up to a second for one), advancing *cursor. Nodes have
  // none: a second's wait.
  std::string NextEvents(int64_t* cursor, const std::vector<FieldTerm>& terms, bool pods) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(1), [&] { return pods && rv_ > *cursor; });
    std::string out;
    if (!pods) return out;
    for (const PodChange& c : changes_) {  // a test's worth of changes: a scan is cheap
      if (c.rv <= *cursor) continue;
      *cursor = c.rv;
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
  std::map<std::string, Json> pods_;  // by "namespace/name"
  std::vector<PodChange> changes_;
};

int Usage() {
  std::fprintf(stderr, "usage: rackwise_test_fake_apiserver --nodes NAME[,NAME...] [--port PORT (0: any)]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> nodes;
  int port = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    if (flag == "--nodes") {
      std::stringstream in(argv[i + 1]);
      for (std::string n; std::getline(in, n, ',');)
        if (!n.empty()) nodes.push_back(n);
    } else if (flag == "--port") {
      port = std::atoi(argv[i + 1]);
      if (port < 0 || port > 65535) return Usage();
    } else {
      return Usage();
    }
  }
  if (nodes.empty()) return Usage();
  signal(SIGPIPE, SIG_IGN);  // a watch client that died: the write fails, the stream ends
  return FakeApiServer(std::move(nodes)).Run(port);
}
