// rackwise-extender: wires the cluster description, the extender service, the HTTP(S) verbs, the gRPC
// Placement service and the API-server sync together, then waits for SIGINT/SIGTERM. All logic lives in the
// rackwise_k8s library; this file only parses flags and connects the parts.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon_support.h"
#include "grpc_service.h"
#include "http_server.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_sync.h"
#include "ledger_link.h"
#include "rackwise/cluster_description.h"
#include "reservation_timer.h"
#include "state_file.h"
#include "telemetry_face.h"

namespace rackwise::k8s {
namespace {

void Log(const std::string& line) { daemon::LogLine("rackwise-extender", line); }

// Everything the command line sets; the defaults are the ones --help shows.
struct ExtenderFlags {
  std::string cluster, state_file;
  std::string listen = "0.0.0.0:8888", grpc_listen = "0.0.0.0:8889", metrics_listen, kubeconfig;
  std::string tls_cert, tls_key, client_ca, grpc_cert, grpc_key, grpc_admin_ca, admin_token_file;
  std::vector<std::string> admin_cns;
  std::string log_level = "info";
  double reservation_ttl_s = 120;
  double gang_arrival_s = 30;
  size_t candidate_cache = ExtenderOptions{}.candidate_cache_entries;
  std::vector<std::string> gpu_device_classes = ExtenderOptions{}.gpu_device_classes;
  bool dra = true;
  std::string pod_group_version = SyncOptions{}.pod_group_version;
  HttpServerOptions http;  // the limits set here; host, port, TLS and mode are filled in when the server starts
};

// How much the HTTP server of the verbs holds at once, and for how long (two sections of --help).
void AddHttpLimitFlags(CLI::App& app, HttpServerOptions* http) {
  CLI::Option_group* requests = app.add_option_group("HTTP requests", "how large and how slow a request may be");
  requests->add_option("--max-body-bytes", http->max_body_bytes, "largest request body accepted (413 beyond)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 32));
  requests
      ->add_option("--body-budget-bytes", http->body_budget_bytes,
                   "request bytes held at once; later large bodies wait their turn (503 after the request timeout)")
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40));
  requests
      ->add_option("--request-timeout-ms", http->request_timeout_ms,
                   "a request must arrive whole this long after its first byte (408 beyond)")
      ->check(CLI::Range(100, 600000));
  requests->add_option("--idle-timeout-ms", http->idle_timeout_ms, "close a keep-alive connection idle this long")
      ->check(CLI::Range(1000, 3600000));

  CLI::Option_group* capacity = app.add_option_group("HTTP connections and threads");
  capacity
      ->add_option("--max-connections", http->max_connections,
                   "open HTTP connections; when full the longest-idle one is closed for a newcomer")
      ->check(CLI::Range(8, 65536));
  capacity
      ->add_option("--threads", http->threads,
                   "HTTP I/O threads (no connection holds one while it waits; default: one per core)")
      ->check(CLI::Range(1, 256));
  capacity
      ->add_option("--bind-threads", http->blocking_threads,
                   "worker threads for binds (they wait on the API server) and bodies of 1 MiB or more (default 4)")
      ->check(CLI::Range(1, 256));
}

// What to serve, where, and with which credentials (two sections of --help).
void AddEndpointFlags(CLI::App& app, ExtenderFlags* f) {
  CLI::Option_group* serving = app.add_option_group("Serving", "what to serve and where");
  serving->add_option("--cluster", f->cluster, "cluster description (rackwise.yaml)")->required();
  serving->add_option("--state-file", f->state_file,
                      "where caps, health and allocations set over gRPC are saved and read back after a restart "
                      "(default: beside --cluster, NAME.state.yaml)");
  serving->add_option("--listen", f->listen, "HOST:PORT for the extender verbs, /healthz, /readyz, /metrics");
  serving->add_option("--grpc-listen", f->grpc_listen, "HOST:PORT for rackwise.v1.Placement (empty: off)");
  serving->add_option("--metrics-listen", f->metrics_listen,
                      "HOST:PORT serving only /healthz, /readyz, /metrics over plain HTTP, for probes and "
                      "Prometheus when the verbs need client certificates (empty: off)");
  serving->add_option("--kubeconfig", f->kubeconfig,
                      "kubeconfig file (default: in-cluster credentials, else standalone)");

  CLI::Option_group* tls = app.add_option_group("TLS and admins", "HTTPS for the verbs; TLS and admins for gRPC");
  tls->add_option("--tls-cert", f->tls_cert, "serve HTTPS with this certificate (PEM)");
  tls->add_option("--tls-key", f->tls_key, "... and this key (PEM)");
  tls->add_option("--client-ca", f->client_ca,
                  "require HTTPS clients (kube-scheduler) to present a cert signed by this CA");
  tls->add_option("--grpc-tls-cert", f->grpc_cert, "TLS certificate for the gRPC port");
  tls->add_option("--grpc-tls-key", f->grpc_key, "TLS key for the gRPC port");
  tls->add_option("--grpc-admin-ca", f->grpc_admin_ca,
                  "client certificates signed by this CA are admins (needs gRPC TLS)");
  tls->add_option("--grpc-admin-cn", f->admin_cns, "limit admin client certificates to these common names");
  tls->add_option("--admin-token-file", f->admin_token_file, "bearer token that makes a gRPC caller an admin");
}

// How the service behaves, what it reads from the API server, and how much the HTTP server holds at once (three
// sections of --help).
void AddTuningFlags(CLI::App& app, ExtenderFlags* f) {
  CLI::Option_group* behaviour = app.add_option_group("Behaviour", "logging, gangs and what counts as a GPU");
  behaviour
      ->add_option("--log-level", f->log_level,
                   "info: start-up, sync and errors; debug: also one line per filter and bind")
      ->check(CLI::IsMember({"info", "debug"}));
  behaviour->add_option("--reservation-ttl", f->reservation_ttl_s, "seconds a gang reservation keeps unbound slots")
      ->check(CLI::Range(1.0, 86400.0));
  behaviour
      ->add_option("--gang-arrival", f->gang_arrival_s,
                   "seconds a group still short of its pods keeps unbound slots after its last new pod was seen")
      ->check(CLI::Range(1.0, 86400.0));
  behaviour
      ->add_option("--candidate-cache", f->candidate_cache,
                   "candidate node lists remembered by their bytes, so a repeated list is not decoded again (0: off)")
      ->check(CLI::Range(0, 1024));
  behaviour
      ->add_option("--gpu-device-classes", f->gpu_device_classes,
                   "DRA device classes whose devices are whole GPUs, counted like nvidia.com/gpu (DeviceClasses "
                   "with extendedResourceName nvidia.com/gpu count too)")
      ->delimiter(',');
  behaviour->add_flag("--dra,!--no-dra", f->dra,
                      "read ResourceClaims, templates, ResourceSlices, DeviceClasses, ComputeDomains and Workload "
                      "API pod groups from the API server (APIs it does not serve count as empty)");
  behaviour
      ->add_option("--pod-group-version", f->pod_group_version,
                   "scheduling.k8s.io version whose PodGroup objects give Workload API gang sizes (Kubernetes "
                   "1.36: v1alpha2; 1.37: v1beta1 or v1alpha3)")
      ->check(CLI::IsMember({"v1alpha2", "v1alpha3", "v1beta1"}));
  AddHttpLimitFlags(app, &f->http);
}

// The API-server client, or null in standalone mode (no credentials found); false (logged) when the
// credentials found cannot be used, which must stop the start rather than silently run standalone.
bool ConnectApiServer(const std::string& kubeconfig, std::unique_ptr<KubeClient>* client) {
  absl::StatusOr<std::optional<KubeConfig>> kube = ResolveKubeConfig(kubeconfig);
  if (!kube.ok()) {
    Log(absl::StrCat("API server credentials: ", kube.status().message()));
    return false;
  }
  if (!kube->has_value()) {
    Log("standalone: no in-cluster credentials and no --kubeconfig; the ledger holds only what this extender "
        "binds itself, and bindings are not posted to any API server");
    return true;
  }
  absl::StatusOr<std::unique_ptr<KubeClient>> c = KubeClient::Create(**kube);
  if (!c.ok()) {
    Log(absl::StrCat("API server client: ", c.status().message()));
    return false;
  }
  *client = std::move(*c);
  Log(absl::StrCat("API server ", (*kube)->host, ":", (*kube)->port, " (", (*kube)->source,
                   "); rebuilding the ledger before answering filter"));
  return true;
}

// Puts back the operator state saved by an earlier run; false (logged) when the file cannot be used.
bool RestoreOperatorState(const ExtenderFlags& flags, const v1::ClusterDescription& description,
                          ExtenderService* service) {
  const std::string state_file = flags.state_file.empty() ? DefaultStateFile(flags.cluster) : flags.state_file;
  absl::StatusOr<v1::ClusterState> restored = AttachStateFile(state_file, description, service);
  if (!restored.ok()) {
    Log(absl::StrCat("operator state ", state_file, ": ", restored.status().message()));
    return false;
  }
  Log(absl::StrCat("operator state ", state_file, ": ", restored->allocations_size(), " allocations, ",
                   restored->nodes_size(), " node overrides, ", restored->caps_size(), " caps restored"));
  return true;
}

// The network faces of the service. Members are stopped and destroyed in reverse order of declaration.
struct Servers {
  std::unique_ptr<ExtenderHttpServer> verbs;
  std::unique_ptr<ExtenderHttpServer> metrics;  // plain-HTTP probes and metrics; null without --metrics-listen
  std::unique_ptr<GrpcServer> placement;        // null with an empty --grpc-listen
};

// The extender verbs (and probes) on --listen. Returns an exit code: 0 when serving.
int StartVerbServer(ExtenderFlags& flags, bool api_server, ExtenderService* service, Servers* servers) {
  HttpServerOptions& http = flags.http;
  if (!daemon::SplitHostPort(flags.listen, &http.host, &http.port)) {
    Log(absl::StrCat("--listen ", flags.listen, ": expected HOST:PORT"));
    return 2;
  }
  http.cert_file = flags.tls_cert;
  http.key_file = flags.tls_key;
  http.client_ca_file = flags.client_ca;
  http.mode = api_server ? "api-server" : "standalone";
  if (flags.log_level == "debug") http.decision_log = Log;
  servers->verbs = std::make_unique<ExtenderHttpServer>(service, http);
  if (absl::Status s = servers->verbs->Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("extender verbs on ", servers->verbs->https() ? "https://" : "http://", http.host, ":",
                   servers->verbs->port()));
  return 0;
}

// Probes and metrics without client certificates, so kubelet and Prometheus need none. An exit code.
int StartMetricsServer(const ExtenderFlags& flags, ExtenderService* service, Servers* servers) {
  if (flags.metrics_listen.empty()) return 0;
  HttpServerOptions plain;
  if (!daemon::SplitHostPort(flags.metrics_listen, &plain.host, &plain.port)) {
    Log(absl::StrCat("--metrics-listen ", flags.metrics_listen, ": expected HOST:PORT"));
    return 2;
  }
  plain.serve_verbs = false;
  plain.threads = 1;
  plain.blocking_threads = 0;  // probes and /metrics never block
  plain.max_connections = 64;
  plain.mode = flags.http.mode;
  servers->metrics = std::make_unique<ExtenderHttpServer>(service, plain);
  if (absl::Status s = servers->metrics->Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("/healthz, /readyz and /metrics on http://", plain.host, ":", servers->metrics->port()));
  return 0;
}

// rackwise.v1.Placement; callers are admins by bearer token or client certificate. An exit code.
int StartPlacementServer(const ExtenderFlags& flags, ExtenderService* service, Servers* servers) {
  if (flags.grpc_listen.empty()) return 0;
  AdminAuthConfig auth;
  if (!flags.admin_token_file.empty()) {
    if (absl::Status s = LoadAdminToken(flags.admin_token_file, &auth.token); !s.ok()) {
      Log(std::string(s.message()));
      return 1;
    }
  }
  auth.client_certs = !flags.grpc_admin_ca.empty();
  auth.common_names = flags.admin_cns;
  GrpcServerOptions g;
  g.address = flags.grpc_listen;
  g.cert_file = flags.grpc_cert;
  g.key_file = flags.grpc_key;
  g.admin_ca_file = flags.grpc_admin_ca;
  servers->placement = std::make_unique<GrpcServer>(service, auth, g);
  if (absl::Status s = servers->placement->Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("gRPC rackwise.v1.Placement on port ", servers->placement->port(),
                   auth.token.empty() && !auth.client_certs ? " (read-only: no admin credential configured)" : ""));
  return 0;
}

// Starts every configured server, in the order their addresses are logged. An exit code: 0 when all serve.
int StartServers(ExtenderFlags& flags, bool api_server, ExtenderService* service, Servers* servers) {
  if (int rc = StartVerbServer(flags, api_server, service, servers); rc != 0) return rc;
  if (int rc = StartMetricsServer(flags, service, servers); rc != 0) return rc;
  if (int rc = StartPlacementServer(flags, service, servers); rc != 0) return rc;
  return 0;
}

// Stops the background work first (nothing new reaches the service), then the servers, then the timer.
void StopAll(telemetry::TelemetryPoller* poller, KubeSync* sync, Servers& servers, ReservationTimer& timer) {
  if (poller) poller->Stop();
  if (sync) sync->Stop();
  if (servers.placement) servers.placement->Stop();
  servers.verbs->Stop();
  if (servers.metrics) servers.metrics->Stop();
  timer.Stop();
}

// With a `ledger:` section, the extender books through the shared power ledger; null otherwise.
// False: the section is there but unusable (bad shares, unreadable TLS or token files).
bool ConnectSharedLedger(const v1::ClusterDescription& description, ExtenderService* service,
                         std::unique_ptr<ledger::LedgerLink>* link) {
  if (!description.has_ledger()) return true;
  absl::StatusOr<std::unique_ptr<ledger::LedgerLink>> made =
      ledger::LedgerLink::Create(service->topology(), description, "k8s/", Log);
  if (!made.ok()) {
    Log(absl::StrCat("ledger: ", made.status().message()));
    return false;
  }
  *link = *std::move(made);
  service->SetSharedLedger(link->get());
  Log(absl::StrCat("shared power ledger at ", description.ledger().url(),
                   ": bookings go through it; until it answers, within Kubernetes' guaranteed slice"));
  return true;
}

int RunExtender(int argc, char** argv) {
  CLI::App app{"rackwise-extender: kube-scheduler extender and gRPC placement service"};
  ExtenderFlags flags;
  app.set_version_flag("--version", ExtenderVersion());
  AddEndpointFlags(app, &flags);
  AddTuningFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  v1::ClusterDescription description;
  std::optional<Topology> topology = daemon::LoadClusterTopology(flags.cluster, &description, Log);
  if (!topology) return 1;
  std::unique_ptr<KubeClient> client;
  if (!ConnectApiServer(flags.kubeconfig, &client)) return 1;

  ExtenderMetrics metrics;
  ExtenderOptions options;
  options.reservation_ttl_ms = static_cast<int64_t>(flags.reservation_ttl_s * 1000);
  options.gang_arrival_ms = static_cast<int64_t>(flags.gang_arrival_s * 1000);
  options.candidate_cache_entries = flags.candidate_cache;
  options.gpu_device_classes = flags.gpu_device_classes;
  ExtenderService service(std::make_unique<Topology>(std::move(*topology)), options, client.get(), &metrics);
  if (!RestoreOperatorState(flags, description, &service)) return 1;
  std::unique_ptr<ledger::LedgerLink> ledger_link;  // outlives every thread that uses the service (they stop first)
  if (!ConnectSharedLedger(description, &service, &ledger_link)) return 1;
  // Without an API server there is nothing to catch up on: the ledger is complete as restored.
  if (!client) service.SetSynced(true);
  ReservationTimer reservation_timer(&service, SteadyNowMs);
  reservation_timer.Start();

  Servers servers;
  if (int rc = StartServers(flags, client != nullptr, &service, &servers); rc != 0) return rc;

  // Measured power: polled in the background, applied under the service's lock.
  std::unique_ptr<telemetry::TelemetryPoller> poller = StartTelemetry(description, &service, Log);
  std::unique_ptr<KubeSync> sync;
  if (client) {
    SyncOptions so;
    so.log = Log;
    so.dra = flags.dra;
    so.pod_group_version = flags.pod_group_version;
    sync = std::make_unique<KubeSync>(client.get(), &service, so);
    sync->Start();
  }

  daemon::WaitForStopSignal();
  Log("stopping");
  StopAll(poller.get(), sync.get(), servers, reservation_timer);
  // Nothing is left to flush (the ledger lives in the API server's pods).
  std::fflush(stderr);
  std::_Exit(0);
}

}  // namespace
}  // namespace rackwise::k8s

int main(int argc, char** argv) { return rackwise::k8s::RunExtender(argc, argv); }
