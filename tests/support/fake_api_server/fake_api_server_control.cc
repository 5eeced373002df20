// See fake_api_server.h: the /_test control routes, over the in-process calls, for tests that run the fake as a
// process (rackwise_test_fake_apiserver).
#include "absl/strings/str_join.h"
#include "rackwise/testing/fake_api_server.h"

namespace rackwise::testing {
namespace {

using Json = nlohmann::json;

const char* ReasonOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound: return "NotFound";
    case absl::StatusCode::kAlreadyExists: return "AlreadyExists";
    default: return "BadRequest";
  }
}

int HttpCodeOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists: return 409;
    default: return 400;
  }
}

}  // namespace

void FakeApiServer::AddTestControlRoutes() {
  // The stored object (`created`: 201), or the error as a Status.
  auto answer = [](httplib::Response& res, const absl::StatusOr<Json>& object, bool created) {
    if (!object.ok()) {
      const absl::StatusCode code = object.status().code();
      return SendStatus(res, HttpCodeOf(code), ReasonOf(code), std::string(object.status().message()));
    }
    res.status = created ? 201 : 200;
    res.set_content(object->dump(), "application/json");
  };
  AddRoute("POST", "/_test/pods",
           [this, answer](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
             Json pod = Json::parse(req.body, nullptr, false);
             if (!pod.is_object()) return SendStatus(res, 400, "BadRequest", "the body is not a JSON object");
             if (!StringAt(pod, "/spec/nodeName").empty())
               return SendStatus(res, 400, "BadRequest", "create pods pending: spec.nodeName is set by a binding");
             answer(res, CreatePod(std::move(pod)), true);
           });
  AddRoute("DELETE", R"(/_test/pods/([^/]+)/([^/]+))",
           [this, answer](const httplib::Request& req, httplib::Response& res, const std::smatch& path) {
             answer(res, DeletePod(path[1].str(), path[2].str()), false);
           });
  AddRoute("GET", "/_test/bound", [this](const httplib::Request&, httplib::Response& res, const std::smatch&) {
    const std::vector<std::string> lines = BoundPods();
    res.set_content(lines.empty() ? "" : absl::StrJoin(lines, "\n") + "\n", "text/plain");
  });
  AddRoute("POST", "/_test/objects",
           [this, answer](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
             answer(res, PutObject(Json::parse(req.body, nullptr, false)), false);
           });
  AddRoute("POST", "/_test/objects/delete",
           [this, answer](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
             answer(res, DeleteObject(Json::parse(req.body, nullptr, false)), false);
           });
  AddRoute("POST", "/_test/compact", [this](const httplib::Request&, httplib::Response& res, const std::smatch&) {
    Compact();
    res.set_content("{}", "application/json");
  });
}

}  // namespace rackwise::testing
