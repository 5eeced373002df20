// Routing and encoding of the extender's HTTP answers (see http_routes.h).
#include "http_routes.h"

#include <chrono>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rackwise::k8s {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

HttpAnswer Json200(std::string body) { return HttpAnswer{200, kJsonType, std::move(body)}; }

HttpAnswer JsonError(int status, absl::string_view message) {
  return HttpAnswer{status, kJsonType, JsonErrorBody(message)};
}

// The verb of a POST target: urlPrefix may carry a path ("http://host:8888/rackwise"), so the verb is the
// last path segment. Empty for anything else.
absl::string_view VerbOf(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return {};
  absl::string_view verb = path.substr(slash + 1);
  for (absl::string_view known : {"filter", "prioritize", "bind", "preempt"}) {
    if (verb == known) return verb;
  }
  return {};
}

}  // namespace

std::string JsonErrorBody(absl::string_view message) {
  std::string out = "{\"Error\":";
  AppendJsonString(message, &out);
  out.push_back('}');
  return out;
}

ExtenderRoutes::ExtenderRoutes(ExtenderService* service, std::string mode, std::function<int64_t()> now_ms,
                               bool serve_verbs)
    : service_(service), mode_(std::move(mode)), now_ms_(std::move(now_ms)), serve_verbs_(serve_verbs) {}

HttpAnswer ExtenderRoutes::Handle(absl::string_view method, absl::string_view target, absl::string_view body) {
  HttpAnswer answer;
  try {
    answer = Route(method, target, body);
  } catch (const std::exception& e) {
    answer = JsonError(500, absl::StrCat("rackwise: internal error: ", e.what()));
  } catch (...) {
    answer = JsonError(500, "rackwise: internal error");
  }
  if (answer.status >= 400) service_->metrics().CountHttpError(answer.status);
  return answer;
}

bool ExtenderRoutes::MayBlock(absl::string_view target) {
  // A group's preemption evicts its victims on other nodes through the API server.
  const absl::string_view verb = VerbOf(target.substr(0, target.find('?')));
  return verb == "bind" || verb == "preempt";
}

HttpAnswer ExtenderRoutes::Route(absl::string_view method, absl::string_view target, absl::string_view body) {
  const size_t question = target.find('?');
  absl::string_view path = target.substr(0, question);
  if (absl::string_view verb = VerbOf(path); !verb.empty()) {
    if (!serve_verbs_) {
      return JsonError(
          404, absl::StrCat("rackwise: ", path, ": this port serves only /healthz, /readyz, /metrics and /limits"));
    }
    if (method != "POST") {
      HttpAnswer answer = JsonError(405, absl::StrCat("rackwise: ", path, " takes POST"));
      answer.allow = "POST";
      return answer;
    }
    if (verb == "filter") return Filter(body);
    if (verb == "prioritize") return Prioritize(body);
    if (verb == "bind") return Bind(body);
    return Preempt(body);
  }
  const bool get = method == "GET";
  if (path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/limits") {
    if (!get) {
      HttpAnswer answer = JsonError(405, absl::StrCat("rackwise: ", path, " takes GET"));
      answer.allow = "GET";
      return answer;
    }
    if (path == "/healthz") return HttpAnswer{200, kTextType, "ok\n"};
    if (path == "/readyz") return Ready();
    if (path == "/limits") return Limits(question == absl::string_view::npos ? "" : target.substr(question + 1));
    return Metrics();
  }
  return JsonError(404, absl::StrCat("rackwise: no such endpoint: ", method, " ", path));
}

std::string ExtenderRoutes::FilterLine(const ExtenderArgs& args, const FilterResult& result) {
  const Json& meta = args.pod.contains("metadata") ? args.pod["metadata"] : Json::object();
  const std::string ns = meta.value("namespace", std::string("default"));
  const std::string name = meta.value("name", std::string("?"));
  const size_t candidates = args.candidate_nodes().size();
  if (!result.error.empty()) return absl::StrCat("filter ", ns, "/", name, ": error: ", result.error);
  std::string line =
      absl::StrCat("filter ", ns, "/", name, ": ", result.feasible.size(), " of ", candidates, " nodes feasible, ",
                   result.failed.size(), " failed, ", result.unresolvable.size(), " never");
  if (!result.reasons.empty()) absl::StrAppend(&line, "; first reason: ", result.reasons.front());
  return line;
}

std::string ExtenderRoutes::BindLine(const BindingArgs& args, const std::string& error) {
  return absl::StrCat("bind ", args.pod_namespace, "/", args.pod_name, " -> ", args.node, ": ",
                      error.empty() ? std::string("bound") : absl::StrCat("refused: ", error));
}

HttpAnswer ExtenderRoutes::Filter(absl::string_view body) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body, service_->candidate_cache());
  if (!args.ok()) {
    service_->metrics().CountDecision(Verb::kFilter, "bad_request");
    return HttpAnswer{400, kJsonType,
                      EncodeFilterError(absl::StrCat("rackwise: bad ExtenderArgs: ", args.status().message()))};
  }
  FilterResult result = service_->Filter(*args, now_ms_());
  if (decision_log_) decision_log_(FilterLine(*args, result));
  HttpAnswer answer = Json200(EncodeFilterResult(result, *args));
  service_->metrics().ObserveLatency(Verb::kFilter, SecondsSince(start));
  return answer;
}

HttpAnswer ExtenderRoutes::Prioritize(absl::string_view body) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body, service_->candidate_cache());
  if (!args.ok()) {
    service_->metrics().CountDecision(Verb::kPrioritize, "bad_request");
    return JsonError(400, absl::StrCat("rackwise: bad ExtenderArgs: ", args.status().message()));
  }
  absl::StatusOr<std::vector<int>> scores = service_->Prioritize(*args, now_ms_());
  if (!scores.ok()) return JsonError(400, absl::StrCat("rackwise: ", scores.status().message()));
  HttpAnswer answer = Json200(EncodeHostPriorityList(args->candidate_nodes(), *scores));
  service_->metrics().ObserveLatency(Verb::kPrioritize, SecondsSince(start));
  return answer;
}

HttpAnswer ExtenderRoutes::Bind(absl::string_view body) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<BindingArgs> args = ParseBindingArgs(body);
  if (!args.ok()) {
    service_->metrics().CountDecision(Verb::kBind, "bad_request");
    return HttpAnswer{
        400, kJsonType,
        EncodeBindingResult(absl::StrCat("rackwise: bad ExtenderBindingArgs: ", args.status().message()))};
  }
  const std::string error = service_->Bind(*args, now_ms_());
  if (decision_log_) decision_log_(BindLine(*args, error));
  HttpAnswer answer = Json200(EncodeBindingResult(error));
  service_->metrics().ObserveLatency(Verb::kBind, SecondsSince(start));
  return answer;
}

HttpAnswer ExtenderRoutes::Preempt(absl::string_view body) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PreemptionArgs> args = ParsePreemptionArgs(body);
  if (!args.ok()) {
    service_->metrics().CountDecision(Verb::kPreempt, "bad_request");
    return JsonError(400, absl::StrCat("rackwise: bad ExtenderPreemptionArgs: ", args.status().message()));
  }
  absl::StatusOr<ReducedPreemption> kept = service_->Preempt(*args, now_ms_(), absl::ToUnixMillis(absl::Now()));
  if (decision_log_) decision_log_(PreemptLine(*args, kept));
  if (!kept.ok()) {
    // A pod the core calls malformed is the caller's error; a refused eviction or a ledger still syncing is not.
    const int status = absl::IsInvalidArgument(kept.status()) ? 400 : 503;
    return JsonError(status, absl::StrCat("rackwise: ", kept.status().message()));
  }
  HttpAnswer answer = Json200(EncodePreemptionResult(kept->nodes));
  service_->metrics().ObserveLatency(Verb::kPreempt, SecondsSince(start));
  return answer;
}

std::string ExtenderRoutes::PreemptLine(const PreemptionArgs& args, const absl::StatusOr<ReducedPreemption>& kept) {
  const Json* meta = FindField(args.pod, "metadata");
  const std::string pod =
      absl::StrCat(meta ? StringField(*meta, "namespace") : "", "/", meta ? StringField(*meta, "name") : "?");
  if (!kept.ok()) return absl::StrCat("preempt ", pod, ": error: ", kept.status().message());
  if (kept->nodes.empty())
    return absl::StrCat("preempt ", pod, ": no node of ", args.victims.size(), ": ", kept->why_none);
  size_t victims = kept->evict.size();
  for (const auto& [node, v] : kept->nodes) victims += v.pod_uids.size();
  return absl::StrCat("preempt ", pod, ": ", kept->nodes.size(), " of ", args.victims.size(), " nodes kept, ", victims,
                      " victims",
                      kept->evict.empty() ? "" : absl::StrCat(" (", kept->evict.size(), " evicted on other nodes)"));
}

HttpAnswer ExtenderRoutes::Ready() const {
  if (!service_->synced()) return HttpAnswer{503, kTextType, "not ready: rebuilding the ledger from the API server\n"};
  if (mode_ == "standalone") {
    return HttpAnswer{200, kTextType,
                      "ok: standalone (no in-cluster credentials and no --kubeconfig): the ledger holds only what "
                      "this extender bound itself\n"};
  }
  return HttpAnswer{200, kTextType, "ok: synced with the API server\n"};
}

HttpAnswer ExtenderRoutes::Metrics() const {
  std::string out = service_->metrics().Render();
  service_->RenderStateMetrics(&out);
  return HttpAnswer{200, "text/plain; version=0.0.4; charset=utf-8", std::move(out)};
}

HttpAnswer ExtenderRoutes::Limits(absl::string_view query) const {
  // One parameter, node=NAME (node names need no percent-decoding: DNS labels); anything else is refused.
  if (query.empty()) return Json200(EncodeLimitsDocument(service_->SteeredLimits()));
  if (!absl::StartsWith(query, "node=") || query.size() == 5 || absl::StrContains(query, "&") ||
      absl::StrContains(query, "%")) {
    return JsonError(400, absl::StrCat("rackwise: /limits takes no parameter but node=NAME, not \"", query, "\""));
  }
  return Json200(EncodeLimitsDocument(LimitsForNode(service_->SteeredLimits(), query.substr(5))));
}

}  // namespace rackwise::k8s
