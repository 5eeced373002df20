// cpp-httplib wiring for the extender verbs and the health/metrics endpoints.
#include "http_server.h"

#include <chrono>
#include <exception>

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

constexpr char kJson[] = "application/json";
constexpr char kText[] = "text/plain; charset=utf-8";

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void Reply(httplib::Response& res, int status, std::string body, const char* type) {
  res.status = status;
  // What set_content does, without its copy of a body that may be hundreds of kilobytes.
  res.body = std::move(body);
  res.set_header("Content-Type", type);
}

std::string ErrorBody(absl::string_view message) {
  std::string out = "{\"Error\":";
  AppendJsonString(message, &out);
  out.push_back('}');
  return out;
}

}  // namespace

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ExtenderHttpServer::ExtenderHttpServer(ExtenderService* service, HttpServerOptions options)
    : service_(service), options_(std::move(options)) {
  if (!options_.now_ms) options_.now_ms = SteadyNowMs;
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

absl::Status ExtenderHttpServer::Start() {
  if (options_.cert_file.empty() != options_.key_file.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate and a key");
  }
  if (!options_.cert_file.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(
        options_.cert_file.c_str(), options_.key_file.c_str(),
        options_.client_ca_file.empty() ? nullptr : options_.client_ca_file.c_str());
    if (!ssl->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot load the TLS certificate ", options_.cert_file,
                                                     " or key ", options_.key_file));
    }
    server_ = std::move(ssl);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  Install();
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ <= 0) return absl::UnavailableError(absl::StrCat("cannot bind ", options_.host));
  } else {
    if (!server_->bind_to_port(options_.host, options_.port)) {
      return absl::UnavailableError(absl::StrCat("cannot bind ", options_.host, ":", options_.port));
    }
    port_ = options_.port;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // listen_after_bind sets is_running before it accepts; wait for it so a caller can connect at once.
  for (int i = 0; i < 2000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

void ExtenderHttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void ExtenderHttpServer::Install() {
  httplib::Server& s = *server_;
  const int threads = options_.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_read_timeout(options_.read_timeout_ms / 1000, (options_.read_timeout_ms % 1000) * 1000);
  s.set_write_timeout(options_.write_timeout_ms / 1000, (options_.write_timeout_ms % 1000) * 1000);
  s.set_keep_alive_timeout(options_.keep_alive_timeout_s);
  s.set_keep_alive_max_count(options_.keep_alive_max_requests);
  s.set_tcp_nodelay(true);

  ExtenderService* svc = service_;
  auto now = options_.now_ms;

  s.set_exception_handler([svc](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = absl::StrCat("internal error: ", e.what());
    } catch (...) {
    }
    svc->metrics().CountHttpError(500);
    Reply(res, 500, ErrorBody(absl::StrCat("rackwise: ", what)), kJson);
  });
  s.set_error_handler([svc](const httplib::Request& req, httplib::Response& res) {
    svc->metrics().CountHttpError(res.status);
    if (res.body.empty()) {
      std::string why = res.status == 413   ? "request body too large"
                        : res.status == 404 ? absl::StrCat("no such endpoint: ", req.method, " ", req.path)
                                            : absl::StrCat("HTTP ", res.status);
      Reply(res, res.status, ErrorBody(absl::StrCat("rackwise: ", why)), kJson);
    }
  });

  // The verbs. urlPrefix may carry a path ("http://host:8888/rackwise"), so match any prefix.
  s.Post(R"((/[^?]*)?/filter)", [svc, now](const httplib::Request& req, httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(req.body, svc->candidate_cache());
    if (!args.ok()) {
      svc->metrics().CountHttpError(400);
      svc->metrics().CountDecision(Verb::kFilter, "bad_request");
      Reply(res, 400, EncodeFilterError(absl::StrCat("rackwise: bad ExtenderArgs: ", args.status().message())), kJson);
      return;
    }
    FilterResult result = svc->Filter(*args, now());
    Reply(res, 200, EncodeFilterResult(result, *args), kJson);
    svc->metrics().ObserveLatency(Verb::kFilter, Seconds(start));
  });
  s.Post(R"((/[^?]*)?/prioritize)", [svc, now](const httplib::Request& req, httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(req.body, svc->candidate_cache());
    if (!args.ok()) {
      svc->metrics().CountHttpError(400);
      svc->metrics().CountDecision(Verb::kPrioritize, "bad_request");
      Reply(res, 400, ErrorBody(absl::StrCat("rackwise: bad ExtenderArgs: ", args.status().message())), kJson);
      return;
    }
    absl::StatusOr<std::vector<int>> scores = svc->Prioritize(*args, now());
    if (!scores.ok()) {
      svc->metrics().CountHttpError(400);
      Reply(res, 400, ErrorBody(absl::StrCat("rackwise: ", scores.status().message())), kJson);
      return;
    }
    Reply(res, 200, EncodeHostPriorityList(args->candidate_nodes(), *scores), kJson);
    svc->metrics().ObserveLatency(Verb::kPrioritize, Seconds(start));
  });
  s.Post(R"((/[^?]*)?/bind)", [svc, now](const httplib::Request& req, httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<BindingArgs> args = ParseBindingArgs(req.body);
    if (!args.ok()) {
      svc->metrics().CountHttpError(400);
      svc->metrics().CountDecision(Verb::kBind, "bad_request");
      Reply(res, 400, EncodeBindingResult(absl::StrCat("rackwise: bad ExtenderBindingArgs: ", args.status().message())),
            kJson);
      return;
    }
    Reply(res, 200, EncodeBindingResult(svc->Bind(*args, now())), kJson);
    svc->metrics().ObserveLatency(Verb::kBind, Seconds(start));
  });
  s.Post(R"((/[^?]*)?/preempt)", [svc, now](const httplib::Request& req, httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<PreemptionArgs> args = ParsePreemptionArgs(req.body);
    if (!args.ok()) {
      svc->metrics().CountHttpError(400);
      svc->metrics().CountDecision(Verb::kPreempt, "bad_request");
      Reply(res, 400, ErrorBody(absl::StrCat("rackwise: bad ExtenderPreemptionArgs: ", args.status().message())),
            kJson);
      return;
    }
    absl::StatusOr<std::map<std::string, MetaVictims>> kept = svc->Preempt(*args, now());
    if (!kept.ok()) {
      svc->metrics().CountHttpError(400);
      Reply(res, 400, ErrorBody(absl::StrCat("rackwise: ", kept.status().message())), kJson);
      return;
    }
    Reply(res, 200, EncodePreemptionResult(*kept), kJson);
    svc->metrics().ObserveLatency(Verb::kPreempt, Seconds(start));
  });
  s.Get(R"((/[^?]*)?/(filter|prioritize|bind|preempt))", [svc](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", "POST");
    Reply(res, 405, ErrorBody(absl::StrCat("rackwise: ", req.path, " takes POST")), kJson);
  });

  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { Reply(res, 200, "ok\n", kText); });
  const std::string mode = options_.mode;
  s.Get("/readyz", [svc, mode](const httplib::Request&, httplib::Response& res) {
    if (!svc->synced()) {
      Reply(res, 503, "not ready: rebuilding the ledger from the API server\n", kText);
    } else if (mode == "standalone") {
      Reply(res, 200,
            "ok: standalone (no in-cluster credentials and no --kubeconfig): the ledger holds only what this "
            "extender bound itself\n",
            kText);
    } else {
      Reply(res, 200, "ok: synced with the API server\n", kText);
    }
  });
  s.Get("/metrics", [svc](const httplib::Request&, httplib::Response& res) {
    std::string out = svc->metrics().Render();
    svc->RenderStateMetrics(&out);
    Reply(res, 200, std::move(out), "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace rackwise::k8s
