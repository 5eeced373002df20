// See fake_api_server.h. The server, the scripted answers and the recording, LIST with pagination and WATCH;
// the state's writes are in fake_api_server_state.cc, the /_test routes in fake_api_server_control.cc.
#include "rackwise/testing/fake_api_server.h"

#include <algorithm>
#include <chrono>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rackwise::testing {
namespace {

using Json = nlohmann::json;

bool IsWatch(const httplib::Request& req) {
  const std::string w = req.get_param_value("watch");
  return w == "1" || w == "true";
}

// Writes `text` as two chunks, as a real stream may split an event; false when the client has gone.
bool WriteInTwoChunks(httplib::DataSink& sink, const std::string& text) {
  const size_t half = text.size() / 2;
  return sink.write(text.data(), half) && sink.write(text.data() + half, text.size() - half);
}

std::string ListKindOf(const std::string& collection) {
  if (collection == "/api/v1/pods") return "PodList";
  if (collection == "/api/v1/nodes") return "NodeList";
  return "List";
}

Json NodeObject(const std::string& name) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", {{"name", name}, {"resourceVersion", "1"}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"spec", Json::object()},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", "8"}}},
            {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

// A continue token: which snapshot, and the offset of the next page in it.
std::string ContinueToken(size_t snapshot, size_t offset) { return absl::StrCat(snapshot, ".", offset); }
bool ParseContinueToken(const std::string& token, size_t* snapshot, size_t* offset) {
  std::pair<std::string, std::string> parts = absl::StrSplit(token, '.');
  return absl::SimpleAtoi(parts.first, snapshot) && absl::SimpleAtoi(parts.second, offset);
}

}  // namespace

void FakeApiServer::SendStatus(httplib::Response& res, int code, const std::string& reason,
                               const std::string& message) {
  res.status = code;
  res.set_content(StatusBody(code, reason, message), "application/json");
}

std::string FakeApiServer::RecordedRequest::param(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? "" : it->second;
}
std::string FakeApiServer::RecordedRequest::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

FakeApiServer::FakeApiServer(Options options) : options_(std::move(options)) {
  if (options_.tls) {
    const Tls& tls = *options_.tls;
    server_ = std::make_unique<httplib::SSLServer>(tls.cert_file.c_str(), tls.key_file.c_str(),
                                                   tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str());
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  server_->new_task_queue = [] { return new httplib::ThreadPool(64); };  // every watch holds a thread
  for (const std::string& node : options_.nodes) collections_["/api/v1/nodes"][node] = NodeObject(node);
  auto dispatch = [this](const httplib::Request& req, httplib::Response& res) { Dispatch(req, res); };
  server_->Get(".*", dispatch).Post(".*", dispatch).Put(".*", dispatch).Patch(".*", dispatch).Delete(".*", dispatch);
  AddApiRoutes();
  if (options_.test_control_routes) AddTestControlRoutes();
}

FakeApiServer::~FakeApiServer() { Stop(); }

absl::Status FakeApiServer::Start() {
  if (!server_->is_valid()) return absl::InvalidArgumentError("the TLS certificate, key or client CA do not load");
  const std::string where = absl::StrCat("127.0.0.1:", options_.port);
  port_ = options_.port == 0 ? server_->bind_to_any_port("127.0.0.1")
                             : (server_->bind_to_port("127.0.0.1", options_.port) ? options_.port : -1);
  if (port_ <= 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", where));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // listen_after_bind marks the server running at once; the wait is bounded in case it fails first.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return server_->is_running() ? absl::OkStatus() : absl::UnavailableError(absl::StrCat("not serving on ", where));
}

void FakeApiServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void FakeApiServer::Script(Route route, ScriptedAnswer answer, int times) {
  if (times == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  scripts_.push_back({std::move(route), std::move(answer), times < 0 ? kAlways : times});
}

std::vector<FakeApiServer::RecordedRequest> FakeApiServer::Requests(const std::string& method,
                                                                    const std::string& path_pattern) const {
  const std::regex pattern(path_pattern);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RecordedRequest> out;
  for (const RecordedRequest& r : requests_) {
    if (r.method == method && std::regex_match(r.path, pattern)) out.push_back(r);
  }
  return out;
}

void FakeApiServer::AddRoute(const std::string& method, const std::string& path_pattern, Handler handler) {
  routes_.push_back({method, std::regex(path_pattern), std::move(handler)});
}

void FakeApiServer::Dispatch(const httplib::Request& req, httplib::Response& res) {
  const bool watch = req.method == "GET" && IsWatch(req);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back({req.method, req.path, req.body, watch, req.params, req.headers});
  }
  if (AnswerFromScript(req, res, watch)) return;
  for (const ApiRoute& route : routes_) {
    std::smatch match;
    if (route.method == req.method && std::regex_match(req.path, match, route.path))
      return route.handler(req, res, match);
  }
  SendStatus(res, 404, "NotFound", "the server could not find the requested resource");
}

bool FakeApiServer::AnswerFromScript(const httplib::Request& req, httplib::Response& res, bool watch) {
  auto matches = [&](const Route& route) {
    if (route.method != req.method || route.path != req.path || route.watch != watch) return false;
    return std::all_of(route.query.begin(), route.query.end(),
                       [&](const auto& kv) { return req.get_param_value(kv.first) == kv.second; });
  };
  std::unique_lock<std::mutex> lock(mu_);
  auto it = std::find_if(scripts_.begin(), scripts_.end(), [&](const Scripted& s) { return matches(s.route); });
  if (it == scripts_.end()) return false;
  const ScriptedAnswer answer = it->answer;
  if (it->remaining != kAlways && --it->remaining == 0) scripts_.erase(it);
  lock.unlock();
  res.status = answer.status;
  if (answer.events.empty() && !answer.hold_open) {
    res.set_content(answer.body, "application/json");
  } else {
    StreamScripted(res, answer);
  }
  return true;
}

void FakeApiServer::StreamScripted(httplib::Response& res, const ScriptedAnswer& answer) {
  auto next = std::make_shared<size_t>(0);
  res.set_chunked_content_provider("application/json", [this, answer, next](size_t, httplib::DataSink& sink) {
    if (*next < answer.events.size()) return WriteInTwoChunks(sink, answer.events[(*next)++] + "\n");
    std::unique_lock<std::mutex> lock(mu_);
    if (answer.hold_open && !changed_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; }))
      return true;  // quiet for another second
    sink.done();
    return true;
  });
}

void FakeApiServer::AddApiRoutes() {
  auto collection = [this](const httplib::Request& q, httplib::Response& r, const std::smatch&) {
    ServeCollection(q, r);
  };
  AddRoute("GET", R"(/api/v1/[a-z]+)", collection);
  AddRoute("GET", R"(/apis/[^/]+/[^/]+/[a-z]+)", collection);
  AddRoute("POST", R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
           [this](const httplib::Request& q, httplib::Response& r, const std::smatch& m) { Bind(q, r, m); });
  AddRoute("POST", R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
           [this](const httplib::Request& q, httplib::Response& r, const std::smatch& m) { Evict(q, r, m); });
}

void FakeApiServer::ServeCollection(const httplib::Request& req, httplib::Response& res) {
  absl::StatusOr<std::vector<FieldTerm>> terms = ParseFieldSelector(req.get_param_value("fieldSelector"));
  if (!terms.ok()) return SendStatus(res, 400, "BadRequest", std::string(terms.status().message()));
  if (IsWatch(req)) return Watch(req, res, *std::move(terms));
  List(req, res, *terms);
}

void FakeApiServer::List(const httplib::Request& req, httplib::Response& res, const std::vector<FieldTerm>& terms) {
  size_t limit = 0;
  if (req.has_param("limit") && !absl::SimpleAtoi(req.get_param_value("limit"), &limit))
    return SendStatus(res, 400, "BadRequest", "limit must be a non-negative integer");
  if (options_.max_page_items > 0 && (limit == 0 || limit > options_.max_page_items)) limit = options_.max_page_items;
  std::lock_guard<std::mutex> lock(mu_);
  size_t id = snapshots_.size(), offset = 0;
  if (req.has_param("continue")) {
    if (!ParseContinueToken(req.get_param_value("continue"), &id, &offset) || id >= snapshots_.size() ||
        offset > snapshots_[id].items.size())
      return SendStatus(res, 400, "BadRequest", "continue key is not valid: " + req.get_param_value("continue"));
    if (snapshots_[id].rv < compacted_rv_)
      return SendStatus(res, 410, "Expired",
                        "The provided continue parameter is too old to display a consistent list result. You can "
                        "start a new list without the continue parameter.");
  } else {
    Snapshot now{rv_, !terms.empty(), {}};
    for (const auto& [key, object] : collections_[req.path]) {
      if (Selected(object, terms)) now.items.push_back(object);
    }
    snapshots_.push_back(std::move(now));
  }
  const Snapshot& snapshot = snapshots_[id];
  const size_t end = limit == 0 ? snapshot.items.size() : std::min(snapshot.items.size(), offset + limit);
  Json list = {{"kind", ListKindOf(req.path)},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", std::to_string(snapshot.rv)}}},
               {"items", Json::array()}};
  for (size_t i = offset; i < end; ++i) list["items"].push_back(snapshot.items[i]);
  if (end < snapshot.items.size()) {
    list["metadata"]["continue"] = ContinueToken(id, end);
    if (!snapshot.filtered) list["metadata"]["remainingItemCount"] = snapshot.items.size() - end;
  }
  if (offset == 0 && end == snapshot.items.size()) snapshots_.pop_back();  // one page: no token refers to it
  res.set_content(list.dump(), "application/json");
}

void FakeApiServer::Watch(const httplib::Request& req, httplib::Response& res, std::vector<FieldTerm> terms) {
  const std::string rv = req.get_param_value("resourceVersion");
  int64_t from = 0;
  int timeout_s = 300;
  if ((!rv.empty() && !absl::SimpleAtoi(rv, &from)) ||
      (req.has_param("timeoutSeconds") && !absl::SimpleAtoi(req.get_param_value("timeoutSeconds"), &timeout_s)))
    return SendStatus(res, 400, "BadRequest", "resourceVersion and timeoutSeconds must be integers");
  timeout_s = std::clamp(timeout_s, 1, 300);
  std::string initial;  // from "now": an ADDED event for each object there, as the real server starts such a watch
  int64_t compacted = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (from == 0) {
      from = rv_;
      for (const auto& [key, object] : collections_[req.path]) {
        if (Selected(object, terms)) initial += Json({{"type", "ADDED"}, {"object", object}}).dump() + "\n";
      }
    }
    compacted = compacted_rv_;
  }
  if (from < compacted) return res.set_content(GoneEvent(from), "application/json");
  const bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto cursor = std::make_shared<int64_t>(from);
  auto pending = std::make_shared<std::string>(std::move(initial));
  res.set_chunked_content_provider(
      "application/json", [this, cursor, pending, until, bookmarks, compacted, terms = std::move(terms),
                           collection = req.path](size_t, httplib::DataSink& sink) {
        bool gone = false;
        if (std::chrono::steady_clock::now() >= until || WatchShouldEnd(compacted, &gone)) {
          if (gone) WriteInTwoChunks(sink, GoneEvent(*cursor));  // a compaction while open: its history is gone
          sink.done();
          return true;
        }
        std::string lines;
        lines.swap(*pending);  // the opening ADDED events go out first, without a wait
        if (lines.empty()) lines = NextEvents(cursor.get(), collection, terms);
        if (lines.empty() && bookmarks) {
          Json mark = {{"type", "BOOKMARK"},
                       {"object",
                        {{"kind", collection == "/api/v1/pods" ? "Pod" : "Object"},
                         {"apiVersion", "v1"},
                         {"metadata", {{"resourceVersion", std::to_string(*cursor)}}}}}};
          lines = mark.dump() + "\n";
        }
        return lines.empty() || WriteInTwoChunks(sink, lines);  // false: the client has gone
      });
}

bool FakeApiServer::WatchShouldEnd(int64_t compacted_at_start, bool* gone) {
  std::lock_guard<std::mutex> lock(mu_);
  *gone = !stopping_ && compacted_rv_ > compacted_at_start;
  return stopping_ || *gone;
}

std::string FakeApiServer::NextEvents(int64_t* cursor, const std::string& collection,
                                      const std::vector<FieldTerm>& terms) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, std::chrono::seconds(1), [&] { return rv_ > *cursor || stopping_; });
  std::string out;
  for (const Change& c : changes_) {  // a test's worth of changes: a scan is cheap
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
  *cursor = std::max(*cursor, rv_);  // seen up to now (a compaction moves rv_ without a change)
  return out;
}

}  // namespace rackwise::testing
