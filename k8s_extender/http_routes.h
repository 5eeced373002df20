// What the extender answers to one HTTP request, apart from any transport: the kube-scheduler verbs
// (POST <prefix>/filter, /prioritize, /bind, /preempt in the upstream wire format) and GET /healthz, /readyz,
// /metrics, /limits (the steered GPU limits node agents follow). The HTTP server (http_server.h) reads a request, hands
// it here, and writes the answer back; tests call it directly. Every answer with a status of 400 or more is counted
// once in rackwise_http_errors_total, here and nowhere else for routed requests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "extender_service.h"

namespace rackwise::k8s {

struct HttpAnswer {
  int status = 200;
  const char* content_type = "application/json";
  std::string body;
  const char* allow = nullptr;  // set on 405: the methods the path takes
};

inline constexpr char kJsonType[] = "application/json";
inline constexpr char kTextType[] = "text/plain; charset=utf-8";

// {"Error":"<message>"}, the body of every JSON error answer.
std::string JsonErrorBody(absl::string_view message);

class ExtenderRoutes {
 public:
  // `service` must outlive this. `mode` is "api-server" or "standalone" (what /readyz says); `now_ms` gives
  // the monotonic milliseconds passed to the service. Without `serve_verbs` only GET /healthz, /readyz and
  // /metrics are answered (a plain port for probes and Prometheus beside the mutual-TLS one for the verbs).
  ExtenderRoutes(ExtenderService* service, std::string mode, std::function<int64_t()> now_ms, bool serve_verbs = true);

  // `target` is the request target (path and optional query). Never throws for anything a client sends.
  HttpAnswer Handle(absl::string_view method, absl::string_view target, absl::string_view body);
  // Whether answering may wait on another server (a bind goes to the API server): the HTTP front end answers
  // such requests off its I/O threads, so that a slow API server cannot stall filter or the probes.
  static bool MayBlock(absl::string_view target);

  // One line per filter, bind and preempt decision (`--log-level debug`): the pod, the outcome and the first reason.
  // Unset (the default): no per-decision lines.
  void set_decision_log(std::function<void(const std::string&)> log) { decision_log_ = std::move(log); }
  // The lines themselves, for tests: "filter ml/pod-1 (4 GPUs): 3 of 8 nodes feasible, 5 failed, 0 never;
  // first reason: ...", "bind ml/pod-1 -> node-3: bound" or "... refused: <why>".
  static std::string FilterLine(const ExtenderArgs& args, const FilterResult& result);
  static std::string BindLine(const BindingArgs& args, const std::string& error);
  // "preempt ml/urgent: 1 of 3 nodes kept, 18 victims (17 evicted on other nodes)", or why none was kept.
  static std::string PreemptLine(const PreemptionArgs& args, const absl::StatusOr<ReducedPreemption>& kept);

 private:
  HttpAnswer Route(absl::string_view method, absl::string_view target, absl::string_view body);
  HttpAnswer Filter(absl::string_view body);
  HttpAnswer Prioritize(absl::string_view body);
  HttpAnswer Bind(absl::string_view body);
  HttpAnswer Preempt(absl::string_view body);
  HttpAnswer Ready() const;
  HttpAnswer Metrics() const;
  // GET /limits[?node=NAME]: the steered GPU limits (limits_document.h), all or one node's.
  HttpAnswer Limits(absl::string_view query) const;

  ExtenderService* service_;
  std::string mode_;
  std::function<int64_t()> now_ms_;
  bool serve_verbs_;
  std::function<void(const std::string&)> decision_log_;
};

}  // namespace rackwise::k8s
