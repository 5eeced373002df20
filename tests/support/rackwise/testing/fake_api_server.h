// FakeApiServer: the kube-apiserver endpoints rackwise's clients use (KubeClient, KubeSync, the node agent), in
// memory, in process, over cpp-httplib on loopback: plain HTTP, or HTTPS that may demand client certificates.
// One fake for every test: rackwise_test_fake_apiserver (a thin main, for process tests) runs it with the /_test
// control routes. What it serves:
//
//   GET  /api/v1/RESOURCE, /apis/GROUP/VERSION/RESOURCE
//        LIST of a collection (pods, nodes, any other): metadata.resourceVersion set. `limit` is honoured as the
//        real server does: a page of at most `limit` items and a continue token; the pages after it come from the
//        same snapshot (same resourceVersion, nothing created or deleted since shows up), with remainingItemCount
//        when no field selector filters. A continue token from before the last compaction gets 410 Expired.
//        Options::max_page_items caps a page below `limit` (a server may answer fewer items than asked).
//   GET  ...?watch=1 (or watch=true)
//        a chunked WATCH from resourceVersion: one upstream event per line ({"type":"ADDED|MODIFIED|DELETED|
//        BOOKMARK","object":{...}}), ended after timeoutSeconds (default and at most 300). Without a
//        resourceVersion (or "0") it starts with an ADDED event for each object there now, as the real server
//        does. With a fieldSelector, an object that enters the selection is ADDED and one that leaves it DELETED.
//        With allowWatchBookmarks, a BOOKMARK every second of quiet (a dead client is found out at the next write).
//        A watch from a resourceVersion older than the last Compact() gets an ERROR event with a 410 Status, as
//        after an etcd compaction; watches open at a compaction get one too.
//   fieldSelector terms (LIST and WATCH, every collection): spec.nodeName, status.phase, metadata.name,
//        metadata.namespace with = == !=; any other field is refused (400), as the real server does.
//   POST /api/v1/namespaces/NS/pods/NAME/binding
//        sets spec.nodeName (MODIFIED), 201; 404 unknown pod, 400 unknown node, 409 if bound already or if
//        metadata.uid names another pod.
//   POST /api/v1/namespaces/NS/pods/NAME/eviction
//        deletes the pod (DELETED), 201; 404 unknown pod. Disruption budgets are not modelled: Script() a 429.
//   Bad input answers 400 with a Status naming what is wrong; errors are Status objects, as upstream. Anything
//   else (namespaced LIST paths, labelSelector, writes other than these) is not served: 404, or ignored.
//
// Nodes come from Options::nodes (all Ready, 8 allocatable nvidia.com/gpu); other objects from the in-process
// calls below (or the /_test routes). Events are kept for the life of the server (a test's worth).
//
// For tests that need a fault or want to see what a client sent:
//   Script(route, answer, times): the next `times` requests matching `route` (method, path, watch or LIST, query
//        values) get `answer` instead of the state's: a status and body, or a watch stream of recorded event
//        lines that then ends or stays open. The first queued answer whose route matches is used.
//   Requests(method, path_pattern): every request received (scripted or not), in order, with its query,
//        headers and body.
//
// The test control routes (Options::test_control_routes; not Kubernetes API):
//   POST   /_test/pods           a pod (core/v1 JSON) created pending: ADDED; answers the stored object (201).
//   DELETE /_test/pods/NS/NAME   deletes it: DELETED.
//   GET    /_test/bound          one "NS/NAME UID NODE GPUS" line per bound pod, sorted (GPUS: the sum of the
//                                containers' nvidia.com/gpu limits, else requests).
//   POST   /_test/objects        an object of any collection (apiVersion and kind say which: the resource is the
//                                kind in lower case plus "s"), created (ADDED) or replaced (MODIFIED).
//   POST   /_test/objects/delete the object named by the body's apiVersion, kind and metadata: DELETED.
//   POST   /_test/compact        older resourceVersions are gone (410) from now on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rackwise/testing/fake_api_objects.h"

namespace rackwise::testing {

class FakeApiServer {
 public:
  using Json = nlohmann::json;

  struct Tls {
    std::string cert_file, key_file;
    std::string client_ca_file;  // non-empty: only clients presenting a certificate this CA signed are served
  };
  struct Options {
    std::vector<std::string> nodes;
    int port = 0;  // 0: a free port
    std::optional<Tls> tls;
    size_t max_page_items = 0;  // 0: a LIST page is as long as `limit` allows
    bool test_control_routes = false;
  };

  // What Script() matches: a method and an exact path; for GET, whether a WATCH or a LIST; and query values the
  // request must carry (others may be there too).
  struct Route {
    std::string method = "GET";
    std::string path;
    bool watch = false;
    std::map<std::string, std::string> query;
  };
  // A scripted answer: `status` with `body`; or, when `events` is set or `hold_open`, a chunked watch stream of
  // `events` (one line each, each split over two chunks as a real stream may be) that then ends, or with
  // `hold_open` stays open and quiet until the server stops.
  struct ScriptedAnswer {
    int status = 200;
    std::string body;
    std::vector<std::string> events;
    bool hold_open = false;
  };
  static constexpr int kAlways = -1;

  struct RecordedRequest {
    std::string method, path, body;
    bool watch = false;
    httplib::Params query;
    httplib::Headers headers;
    std::string param(const std::string& name) const;  // "" when absent
    std::string header(const std::string& name) const;
  };

  explicit FakeApiServer(Options options);
  ~FakeApiServer();  // Stop()
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Listens (on 127.0.0.1:Options::port) and serves from its own threads until Stop().
  absl::Status Start();
  // Ends open watches and stops serving. Idempotent.
  void Stop();
  int port() const { return port_; }
  int64_t resource_version() const;

  // Pods. CreatePod: a new pod as given (kind, apiVersion, namespace "default", a uid and phase Pending filled
  // in when missing): ADDED; AlreadyExists if it exists. PutPod: creates or replaces (ADDED or MODIFIED).
  // ReplacePods: the pods become exactly `pods` (DELETED for those left out). DeletePod: DELETED; NotFound.
  // Each answers the stored object (a deletion: the object as it was).
  absl::StatusOr<Json> CreatePod(Json pod);
  absl::StatusOr<Json> PutPod(Json pod);
  absl::Status ReplacePods(std::vector<Json> pods);
  absl::StatusOr<Json> DeletePod(const std::string& pod_namespace, const std::string& name);
  // Objects of any collection, which apiVersion and kind name: /api/v1/<kind>s for apiVersion v1, else
  // /apis/<apiVersion>/<kind>s (lower case). SeedObjects puts each object of a JSON array.
  absl::StatusOr<Json> PutObject(Json object);
  absl::StatusOr<Json> DeleteObject(const Json& object);
  absl::Status SeedObjects(const Json& objects);
  // "NS/NAME UID NODE GPUS" per bound pod, sorted.
  std::vector<std::string> BoundPods() const;
  // Resource versions up to now are gone: watches from them (and open ones) get 410, their continue tokens too.
  void Compact();

  // `times` kAlways (any negative): never used up, so later answers for the same route are never reached.
  void Script(Route route, ScriptedAnswer answer, int times = 1);
  // The requests whose method is `method` and whose path matches the regular expression `path_pattern`.
  std::vector<RecordedRequest> Requests(const std::string& method, const std::string& path_pattern) const;

 private:
  struct Change {  // one object's change: before null for a creation, after null for a deletion
    int64_t rv = 0;
    Json before, after;
    std::string collection;
  };
  struct Scripted {
    Route route;
    ScriptedAnswer answer;
    int remaining = 1;  // kAlways: never used up
  };
  struct Snapshot {  // a paginated LIST's items, which its continue tokens page through
    int64_t rv = 0;
    bool filtered = false;
    std::vector<Json> items;
  };

  // Every request goes through Dispatch: recorded (with its body, which httplib reads only once a route is
  // chosen), answered by a Script() entry, else by the first route whose method and path pattern match, else 404.
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, const std::smatch&)>;
  struct ApiRoute {
    std::string method;
    std::regex path;
    Handler handler;
  };
  void AddRoute(const std::string& method, const std::string& path_pattern, Handler handler);
  void Dispatch(const httplib::Request& req, httplib::Response& res);
  bool AnswerFromScript(const httplib::Request& req, httplib::Response& res, bool watch);
  static void SendStatus(httplib::Response& res, int code, const std::string& reason, const std::string& message);
  void AddApiRoutes();
  void AddTestControlRoutes();  // fake_api_server_control.cc
  void ServeCollection(const httplib::Request& req, httplib::Response& res);
  void List(const httplib::Request& req, httplib::Response& res, const std::vector<FieldTerm>& terms);
  void Watch(const httplib::Request& req, httplib::Response& res, std::vector<FieldTerm> terms);
  // POST /api/v1/namespaces/NS/pods/NAME/binding and .../eviction: `pod` holds NS and NAME.
  void Bind(const httplib::Request& req, httplib::Response& res, const std::smatch& pod_path);
  void Evict(const httplib::Request& req, httplib::Response& res, const std::smatch& pod_path);
  void StreamScripted(httplib::Response& res, const ScriptedAnswer& answer);

  // Under mu_: stamps a new resourceVersion on `after` (or, when null, on the deleted object), stores it and
  // records the change; answers the stamped object.
  Json ChangeLocked(const std::string& collection, const std::string& key, Json after);
  const Json* FindLocked(const std::string& collection, const std::string& key) const;
  // The watch lines of `collection`'s changes after *cursor that `terms` see; advances *cursor.
  // Waits up to a second for one (or for Stop()).
  std::string NextEvents(int64_t* cursor, const std::string& collection, const std::vector<FieldTerm>& terms);
  bool WatchShouldEnd(int64_t compacted_at_start, bool* gone);
  absl::StatusOr<Json> PutPodLocked(Json pod, bool create_only);

  Options options_;
  std::unique_ptr<httplib::Server> server_;
  std::vector<ApiRoute> routes_;  // set before Start(), read only after
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a change, a compaction or Stop()
  bool stopping_ = false;
  int64_t rv_ = 1;
  int64_t compacted_rv_ = 0;  // watches and continue tokens from before this resourceVersion get 410
  std::map<std::string, std::map<std::string, Json>> collections_;  // path -> "namespace/name" -> object
  std::vector<Change> changes_;
  std::vector<Snapshot> snapshots_;
  std::vector<Scripted> scripts_;
  std::vector<RecordedRequest> requests_;
};

}  // namespace rackwise::testing
