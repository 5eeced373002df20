// rackwise-extender: wires the cluster description, the extender service, the HTTP(S) verbs, the gRPC
// Placement service and the API-server sync together, then waits for SIGINT/SIGTERM. All logic lives in the
// rackwise_k8s library; this file only parses flags and connects the parts.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon_support.h"
#include "http_server.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_sync.h"
#include "rackwise/cluster_description.h"
#include "reservation_timer.h"
#include "state_file.h"
#include "telemetry_face.h"
#ifdef RACKWISE_HAVE_GRPC
#include "grpc_service.h"
#endif

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

void Log(const std::string& line) { rackwise::k8s::LogLine("rackwise-extender", line); }

}  // namespace

int main(int argc, char** argv) {
  using namespace rackwise;
  using namespace rackwise::k8s;
  CLI::App app{"rackwise-extender: kube-scheduler extender and gRPC placement service"};
  std::string state_file;
  std::string cluster, listen = "0.0.0.0:8888", grpc_listen = "0.0.0.0:8889", metrics_listen, kubeconfig;
  std::string tls_cert, tls_key, client_ca, grpc_cert, grpc_key, grpc_admin_ca, admin_token_file;
  std::vector<std::string> admin_cns;
  double reservation_ttl_s = 120;
  size_t candidate_cache = ExtenderOptions{}.candidate_cache_entries;
  HttpServerOptions http;
  app.set_version_flag("--version", ExtenderVersion());
  app.add_option("--cluster", cluster, "cluster description (rackwise.yaml)")->required();
  app.add_option("--state-file", state_file,
                 "where caps, health and allocations set over gRPC are saved and read back after a restart "
                 "(default: beside --cluster, NAME.state.yaml)");
  app.add_option("--listen", listen, "HOST:PORT for the extender verbs, /healthz, /readyz, /metrics");
  app.add_option("--grpc-listen", grpc_listen, "HOST:PORT for rackwise.v1.Placement (empty: off)");
  app.add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT serving only /healthz, /readyz, /metrics over plain HTTP, for probes and Prometheus "
                 "when the verbs need client certificates (empty: off)");
  app.add_option("--kubeconfig", kubeconfig, "kubeconfig file (default: in-cluster credentials, else standalone)");
  app.add_option("--tls-cert", tls_cert, "serve HTTPS with this certificate (PEM)");
  app.add_option("--tls-key", tls_key, "... and this key (PEM)");
  app.add_option("--client-ca", client_ca,
                 "require HTTPS clients (kube-scheduler) to present a cert signed by this CA");
  app.add_option("--grpc-tls-cert", grpc_cert, "TLS certificate for the gRPC port");
  app.add_option("--grpc-tls-key", grpc_key, "TLS key for the gRPC port");
  app.add_option("--grpc-admin-ca", grpc_admin_ca, "client certificates signed by this CA are admins (needs gRPC TLS)");
  app.add_option("--grpc-admin-cn", admin_cns, "limit admin client certificates to these common names");
  app.add_option("--admin-token-file", admin_token_file, "bearer token that makes a gRPC caller an admin");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "info: start-up, sync and errors; debug: also one line per filter and bind")
      ->check(CLI::IsMember({"info", "debug"}));
  app.add_option("--reservation-ttl", reservation_ttl_s, "seconds a gang reservation keeps unbound slots")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--candidate-cache", candidate_cache,
                 "candidate node lists remembered by their bytes, so a repeated list is not decoded again (0: off)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-body-bytes", http.max_body_bytes, "largest request body accepted (413 beyond)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 32));
  app.add_option("--body-budget-bytes", http.body_budget_bytes,
                 "request bytes held at once; later large bodies wait their turn (503 after the request timeout)")
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40));
  app.add_option("--max-connections", http.max_connections,
                 "open HTTP connections; when full the longest-idle one is closed for a newcomer")
      ->check(CLI::Range(8, 65536));
  app.add_option("--threads", http.threads, "HTTP I/O threads (no connection holds one while it waits)")
      ->check(CLI::Range(1, 256));
  app.add_option("--request-timeout-ms", http.request_timeout_ms,
                 "a request must arrive whole this long after its first byte (408 beyond)")
      ->check(CLI::Range(100, 600000));
  app.add_option("--idle-timeout-ms", http.idle_timeout_ms, "close a keep-alive connection idle this long")
      ->check(CLI::Range(1000, 3600000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(cluster, &diagnostics);
  if (!description.ok()) {
    for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    if (diagnostics.empty()) Log(std::string(description.status().message()));
    return 1;
  }
  absl::StatusOr<Topology> topology = Topology::Build(*description);
  if (!topology.ok()) {
    Log(absl::StrCat(cluster, ": ", topology.status().message()));
    return 1;
  }
  Log(absl::StrCat("cluster ", topology->cluster_name(), ": ", topology->nodes().size(), " nodes, ",
                   topology->racks().size(), " racks, ", topology->domains().size(), " NVLink domains, ",
                   topology->total_gpus(), " GPUs"));

  absl::StatusOr<std::optional<KubeConfig>> kube = ResolveKubeConfig(kubeconfig);
  if (!kube.ok()) {
    Log(absl::StrCat("API server credentials: ", kube.status().message()));
    return 1;
  }
  std::unique_ptr<KubeClient> client;
  if (kube->has_value()) {
    absl::StatusOr<std::unique_ptr<KubeClient>> c = KubeClient::Create(**kube);
    if (!c.ok()) {
      Log(absl::StrCat("API server client: ", c.status().message()));
      return 1;
    }
    client = std::move(*c);
    Log(absl::StrCat("API server ", (*kube)->host, ":", (*kube)->port, " (", (*kube)->source,
                     "); rebuilding the ledger before answering filter"));
  } else {
    Log("standalone: no in-cluster credentials and no --kubeconfig; the ledger holds only what this extender "
        "binds itself, and bindings are not posted to any API server");
  }

  ExtenderMetrics metrics;
  ExtenderOptions options;
  options.reservation_ttl_ms = static_cast<int64_t>(reservation_ttl_s * 1000);
  options.candidate_cache_entries = candidate_cache;
  ExtenderService service(std::make_unique<Topology>(std::move(*topology)), options, client.get(), &metrics);
  if (state_file.empty()) state_file = DefaultStateFile(cluster);
  absl::StatusOr<v1::ClusterState> restored = AttachStateFile(state_file, *description, &service);
  if (!restored.ok()) {
    Log(absl::StrCat("operator state ", state_file, ": ", restored.status().message()));
    return 1;
  }
  Log(absl::StrCat("operator state ", state_file, ": ", restored->allocations_size(), " allocations, ",
                   restored->nodes_size(), " node overrides, ", restored->caps_size(), " caps restored"));
  if (!client) service.SetSynced(true);
  ReservationTimer reservation_timer(&service, SteadyNowMs);
  reservation_timer.Start();

  if (!k8s::SplitHostPort(listen, &http.host, &http.port)) {
    Log(absl::StrCat("--listen ", listen, ": expected HOST:PORT"));
    return 2;
  }
  http.cert_file = tls_cert;
  http.key_file = tls_key;
  http.client_ca_file = client_ca;
  http.mode = client ? "api-server" : "standalone";
  if (log_level == "debug") http.decision_log = Log;
  ExtenderHttpServer server(&service, http);
  if (absl::Status s = server.Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("extender verbs on ", server.https() ? "https://" : "http://", http.host, ":", server.port()));
  std::unique_ptr<ExtenderHttpServer> metrics_server;
  if (!metrics_listen.empty()) {
    HttpServerOptions plain;
    if (!SplitHostPort(metrics_listen, &plain.host, &plain.port)) {
      Log(absl::StrCat("--metrics-listen ", metrics_listen, ": expected HOST:PORT"));
      return 2;
    }
    plain.serve_verbs = false;
    plain.threads = 1;
    plain.max_connections = 64;
    plain.mode = http.mode;
    metrics_server = std::make_unique<ExtenderHttpServer>(&service, plain);
    if (absl::Status s = metrics_server->Start(); !s.ok()) {
      Log(std::string(s.message()));
      return 1;
    }
    Log(absl::StrCat("/healthz, /readyz and /metrics on http://", plain.host, ":", metrics_server->port()));
  }

#ifdef RACKWISE_HAVE_GRPC
  std::unique_ptr<GrpcServer> placement_server;
  if (!grpc_listen.empty()) {
    AdminAuthConfig auth;
    if (!admin_token_file.empty()) {
      if (absl::Status s = LoadAdminToken(admin_token_file, &auth.token); !s.ok()) {
        Log(std::string(s.message()));
        return 1;
      }
    }
    auth.client_certs = !grpc_admin_ca.empty();
    auth.common_names = admin_cns;
    GrpcServerOptions g;
    g.address = grpc_listen;
    g.cert_file = grpc_cert;
    g.key_file = grpc_key;
    g.admin_ca_file = grpc_admin_ca;
    placement_server = std::make_unique<GrpcServer>(&service, auth, g);
    if (absl::Status s = placement_server->Start(); !s.ok()) {
      Log(std::string(s.message()));
      return 1;
    }
    Log(absl::StrCat("gRPC rackwise.v1.Placement on port ", placement_server->port(),
                     auth.token.empty() && !auth.client_certs ? " (read-only: no admin credential configured)" : ""));
  }
#endif

  // Measured power: polled in the background, applied under the service's lock.
  std::unique_ptr<telemetry::TelemetryPoller> poller = StartTelemetry(*description, &service, Log);

  std::unique_ptr<KubeSync> sync;
  if (client) {
    SyncOptions so;
    so.log = Log;
    sync = std::make_unique<KubeSync>(client.get(), &service, so);
    sync->Start();
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  while (!g_stop) {
    struct timespec ts = {0, 200'000'000};
    nanosleep(&ts, nullptr);
  }
  Log("stopping");
  if (poller) poller->Stop();
  if (sync) sync->Stop();
#ifdef RACKWISE_HAVE_GRPC
  if (placement_server) placement_server->Stop();
#endif
  server.Stop();
  if (metrics_server) metrics_server->Stop();
  reservation_timer.Stop();
  // Nothing is left to flush (the ledger lives in the API server's pods).
  std::fflush(stderr);
  std::_Exit(0);
}
