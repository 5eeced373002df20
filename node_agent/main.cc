// rackwise-node-agent: on each Kubernetes GPU node, enforces the watts per GPU that pods declare with
// rackwise.io/gpu-watts (the watts the extender's ledger counted) as NVML power limits, and restores the
// limits when the pods are gone. This file parses flags and wires the parts; see node_agent.h.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent_http.h"
#include "daemon_support.h"
#include "kube_client.h"
#include "kube_config.h"
#include "lease_limits.h"
#include "node_agent.h"
#include "node_pods.h"
#include "node_power/nvml_library.h"
#include "node_power/power_limit_leases.h"
#include "pod_resources_client.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

void Log(const std::string& line) { rackwise::k8s::LogLine("rackwise-node-agent", line); }

// Sleeps `seconds` in small steps so that a signal ends the wait at once.
void Wait(double seconds) {
  for (double slept = 0; slept < seconds && !g_stop; slept += 0.05) {
    struct timespec ts = {0, 50'000'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rackwise;
  using namespace rackwise::node_agent;
  CLI::App app{"rackwise-node-agent: enforces rackwise.io/gpu-watts as NVML power limits on this node"};
  app.set_version_flag("--version", absl::StrCat("rackwise-node-agent ", RACKWISE_VERSION));
  const char* env_node = std::getenv("NODE_NAME");
  std::string node = env_node ? env_node : "", kubeconfig, listen = "0.0.0.0:9842";
  std::string endpoint = kDefaultPodResourcesEndpoint, nvml_library = node_power::kDefaultNvmlLibrary;
  std::string state_file = "/var/lib/rackwise/node-agent/power-limits", resource = kNvidiaGpuResource;
  double interval_s = 10;
  app.add_option("--node-name", node, "this node's name (default: $NODE_NAME)");
  app.add_option("--kubeconfig", kubeconfig, "kubeconfig file (default: in-cluster credentials)");
  app.add_option("--pod-resources", endpoint, "the kubelet's PodResources socket")->capture_default_str();
  app.add_option("--nvml-library", nvml_library, "NVML library to dlopen")->capture_default_str();
  app.add_option("--state-file", state_file, "where the limits set and the ones they replaced are kept")
      ->capture_default_str();
  app.add_option("--resource-name", resource, "extended resource of the GPUs")->capture_default_str();
  app.add_option("--interval", interval_s, "seconds between reconcile rounds")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--listen", listen, "HOST:PORT for /metrics and /healthz")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (node.empty()) {
    Log("no node name: pass --node-name or set NODE_NAME (the DaemonSet sets it from spec.nodeName)");
    return 2;
  }
  std::string host;
  int port = 0;
  if (!k8s::SplitHostPort(listen, &host, &port)) {
    Log(absl::StrCat("--listen ", listen, ": expected HOST:PORT"));
    return 2;
  }

  std::error_code mkdir_error;
  std::filesystem::create_directories(std::filesystem::path(state_file).parent_path(), mkdir_error);
  if (mkdir_error) {
    Log(absl::StrCat("--state-file ", state_file, ": cannot create its directory: ", mkdir_error.message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<node_power::GpuPowerControl>> nvml = node_power::OpenNvml(nvml_library);
  if (!nvml.ok()) {
    Log(absl::StrCat("NVML: ", nvml.status().message()));
    return 1;
  }
  absl::StatusOr<std::optional<k8s::KubeConfig>> kube = k8s::ResolveKubeConfig(kubeconfig);
  if (!kube.ok() || !kube->has_value()) {
    Log(kube.ok() ? "no API server: pass --kubeconfig or run in a pod with a service account"
                  : absl::StrCat("API server credentials: ", kube.status().message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<k8s::KubeClient>> client = k8s::KubeClient::Create(**kube);
  if (!client.ok()) {
    Log(absl::StrCat("API server client: ", client.status().message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<PodResourcesClient>> kubelet = PodResourcesClient::Create(endpoint);
  if (!kubelet.ok()) {
    Log(std::string(kubelet.status().message()));
    return 2;
  }

  node_power::PowerLimitLeases leases(nvml->get(), state_file);
  LeaseLimits limits(&leases);
  AgentMetrics metrics;
  AgentHttpServer http(&metrics, host, port, static_cast<int64_t>((3 * interval_s + 60) * 1000));
  if (absl::Status s = http.Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  Log(absl::StrCat("node ", node, ": /metrics and /healthz on http://", host, ":", http.port(), "; PodResources ",
                   endpoint, "; state ", state_file));
  AgentSources sources;
  sources.annotated_pods = [&] { return ListAnnotatedPods(client->get(), node); };
  sources.pod_devices = [&] { return (*kubelet)->ListDevices(resource); };
  NodeAgent agent(std::move(sources), nvml->get(), &limits, &metrics, Log);

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
  // Limits stay in force: the pods still run (a DaemonSet rollout must not lift them); the next agent finds
  // them in the state file and restores those whose pods ended meanwhile.
  Log("stopping; limits in force stay, recorded in the state file");
  http.Stop();
  return 0;
}
