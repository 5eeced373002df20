// rackwise-node-agent: on each Kubernetes GPU node, enforces the watts per GPU that pods declare with
// rackwise.io/gpu-watts (the watts the extender's ledger counted) as NVML power limits, and restores the
// limits when the pods are gone. This file parses flags and wires the parts; see node_agent.h.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent_http.h"
#include "daemon_support.h"
#include "kube_client.h"
#include "kube_config.h"
#include "lease_limits.h"
#include "limit_follower.h"
#include "node_agent.h"
#include "node_pods.h"
#include "node_power/nvml_library.h"
#include "node_power/power_limit_leases.h"
#include "pod_resources_client.h"

namespace rackwise::node_agent {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

void Log(const std::string& line) { daemon::LogLine("rackwise-node-agent", line); }

// Sleeps `seconds` in small steps so that a signal ends the wait at once.
void Wait(double seconds) {
  for (double slept = 0; slept < seconds && !g_stop; slept += 0.05) {
    struct timespec ts = {0, 50'000'000};
    nanosleep(&ts, nullptr);
  }
}

// Everything the command line sets; the defaults are the ones --help shows.
struct AgentFlags {
  std::string node, kubeconfig, listen = "0.0.0.0:9842";
  std::string endpoint = kDefaultPodResourcesEndpoint, nvml_library = node_power::kDefaultNvmlLibrary;
  std::string state_file = "/var/lib/rackwise/node-agent/power-limits", resource = kNvidiaGpuResource;
  double interval_s = 10;
  LimitsSource limits;  // the extender's steered limits; url empty: not followed
  // --listen split up, once the flags are checked.
  std::string host;
  int port = 0;
};

void AddFlags(CLI::App& app, AgentFlags* f) {
  app.add_option("--node-name", f->node, "this node's name (default: $NODE_NAME)");
  app.add_option("--kubeconfig", f->kubeconfig, "kubeconfig file (default: in-cluster credentials)");
  app.add_option("--pod-resources", f->endpoint, "the kubelet's PodResources socket")->capture_default_str();
  app.add_option("--nvml-library", f->nvml_library, "NVML library to dlopen")->capture_default_str();
  app.add_option("--state-file", f->state_file, "where the limits set and the ones they replaced are kept")
      ->capture_default_str();
  app.add_option("--resource-name", f->resource, "extended resource of the GPUs")->capture_default_str();
  app.add_option("--interval", f->interval_s, "seconds between reconcile rounds")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--listen", f->listen, "HOST:PORT for /metrics and /healthz")->capture_default_str();
  app.add_option("--limits-url", f->limits.url,
                 "the extender's base URL (http(s)://HOST:PORT): follow its steered limits (GET /limits) every round");
  app.add_option("--limits-ca-file", f->limits.ca_file, "CA (PEM) to verify an https --limits-url with");
  app.add_option("--limits-token-file", f->limits.token_file, "bearer token sent with GET /limits");
}

// What CLI11 cannot check: a node name from either source, and --listen's shape. An exit code: 0 when usable.
int CheckFlags(AgentFlags* f) {
  if (f->node.empty()) {
    Log("no node name: pass --node-name or set NODE_NAME (the DaemonSet sets it from spec.nodeName)");
    return 2;
  }
  if (!daemon::SplitHostPort(f->listen, &f->host, &f->port)) {
    Log(absl::StrCat("--listen ", f->listen, ": expected HOST:PORT"));
    return 2;
  }
  if (!f->limits.url.empty() && !absl::StartsWith(f->limits.url, "http://") &&
      !absl::StartsWith(f->limits.url, "https://")) {
    Log(absl::StrCat("--limits-url ", f->limits.url, ": expected http(s)://HOST:PORT"));
    return 2;
  }
  // A round waits for the extender at most this long, so a silent extender does not stall the annotation path.
  f->limits.timeout_s = std::min(5.0, std::max(0.5, f->interval_s));
  return 0;
}

// What the agent reads and drives. Destroyed in reverse order of declaration.
struct AgentDependencies {
  std::unique_ptr<node_power::GpuPowerControl> nvml;
  std::unique_ptr<k8s::KubeClient> api_server;
  std::unique_ptr<PodResourcesClient> kubelet;
};

// The API-server client; the agent has no standalone mode, so missing credentials are an error. Null (logged)
// when there is none.
std::unique_ptr<k8s::KubeClient> ConnectApiServer(const std::string& kubeconfig) {
  absl::StatusOr<std::optional<k8s::KubeConfig>> kube = k8s::ResolveKubeConfig(kubeconfig);
  if (!kube.ok() || !kube->has_value()) {
    Log(kube.ok() ? "no API server: pass --kubeconfig or run in a pod with a service account"
                  : absl::StrCat("API server credentials: ", kube.status().message()));
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<k8s::KubeClient>> client = k8s::KubeClient::Create(**kube);
  if (!client.ok()) {
    Log(absl::StrCat("API server client: ", client.status().message()));
    return nullptr;
  }
  return std::move(*client);
}

// Prepares the state file's directory and opens NVML, the API server and the kubelet, logging the first
// that fails. An exit code: 0 when all are open.
int OpenDependencies(const AgentFlags& f, AgentDependencies* deps) {
  std::error_code mkdir_error;
  std::filesystem::create_directories(std::filesystem::path(f.state_file).parent_path(), mkdir_error);
  if (mkdir_error) {
    Log(absl::StrCat("--state-file ", f.state_file, ": cannot create its directory: ", mkdir_error.message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<node_power::GpuPowerControl>> nvml = node_power::OpenNvml(f.nvml_library);
  if (!nvml.ok()) {
    Log(absl::StrCat("NVML: ", nvml.status().message()));
    return 1;
  }
  deps->nvml = std::move(*nvml);
  deps->api_server = ConnectApiServer(f.kubeconfig);
  if (!deps->api_server) return 1;
  absl::StatusOr<std::unique_ptr<PodResourcesClient>> kubelet = PodResourcesClient::Create(f.endpoint);
  if (!kubelet.ok()) {
    Log(std::string(kubelet.status().message()));
    return 2;
  }
  deps->kubelet = std::move(*kubelet);
  return 0;
}

// Reconciles every `interval_s` until SIGINT or SIGTERM. An error is logged when it changes, not every round,
// so a kubelet that stays down does not flood the log.
void ReconcileUntilStopped(NodeAgent& agent, AgentHttpServer& http, double interval_s) {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::string last_error;
  while (!g_stop) {
    absl::Status s = agent.RunOnce();
    http.RoundEnded();
    std::string error = s.ok() ? "" : std::string(s.message());
    if (error != last_error) Log(error.empty() ? "sources readable again" : error);
    last_error = error;
    Wait(interval_s);
  }
}

int RunAgent(int argc, char** argv) {
  CLI::App app{"rackwise-node-agent: enforces rackwise.io/gpu-watts as NVML power limits on this node"};
  app.set_version_flag("--version", absl::StrCat("rackwise-node-agent ", RACKWISE_VERSION));
  AgentFlags flags;
  const char* env_node = std::getenv("NODE_NAME");
  flags.node = env_node ? env_node : "";
  AddFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (int rc = CheckFlags(&flags); rc != 0) return rc;
  AgentDependencies deps;
  if (int rc = OpenDependencies(flags, &deps); rc != 0) return rc;

  node_power::PowerLimitLeases leases(deps.nvml.get(), flags.state_file);
  LeaseLimits limits(&leases);
  AgentMetrics metrics;
  // /healthz fails after three missed rounds (plus a minute's grace), so a wedged agent gets restarted.
  AgentHttpServer http(&metrics, flags.host, flags.port, static_cast<int64_t>((3 * flags.interval_s + 60) * 1000));
  if (absl::Status s = http.Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("node ", flags.node, ": /metrics and /healthz on http://", flags.host, ":", http.port(),
                   "; PodResources ", flags.endpoint, "; state ", flags.state_file));
  AgentSources sources;
  sources.annotated_pods = [&] { return ListAnnotatedPods(deps.api_server.get(), flags.node); };
  sources.pod_devices = [&] {
    // DRA GPUs are named by this node's ResourceSlices; unreadable slices leave NVIDIA's names (dra_device_ids.h).
    absl::StatusOr<k8s::DeviceDirectory> slices = ListNodeSlices(deps.api_server.get(), flags.node);
    return deps.kubelet->ListDevices(flags.resource, 10'000, kNvidiaDraGpuDriver, slices.ok() ? &*slices : nullptr);
  };
  std::unique_ptr<LimitFollower> follower;
  if (!flags.limits.url.empty()) {
    follower = std::make_unique<LimitFollower>(
        flags.node, [&] { return FetchLimits(flags.limits, flags.node); }, Log);
    sources.steer = [&](std::vector<PodWatts> pods) {
      std::vector<PodWatts> steered = follower->Steer(std::move(pods));
      const SteeringStatus s = follower->status();
      metrics.SetSteering(s.generation, s.fetch_failures, s.steered);
      return steered;
    };
    Log(absl::StrCat("following the steered limits of ", flags.limits.url, "/limits every round"));
  }
  NodeAgent agent(std::move(sources), deps.nvml.get(), &limits, &metrics, Log);

  ReconcileUntilStopped(agent, http, flags.interval_s);
  // Limits stay in force: the pods still run (a DaemonSet rollout must not lift them); the next agent finds
  // them in the state file and restores those whose pods ended meanwhile.
  Log("stopping; limits in force stay, recorded in the state file");
  http.Stop();
  return 0;
}

}  // namespace
}  // namespace rackwise::node_agent

int main(int argc, char** argv) { return rackwise::node_agent::RunAgent(argc, argv); }
