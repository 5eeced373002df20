#include "daemon_support.h"

#include <csignal>
#include <cstdio>
#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rackwise/cluster_description.h"

namespace rackwise::daemon {

void LogLine(absl::string_view program, const std::string& line) {
  std::time_t t = std::time(nullptr);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  std::fprintf(stderr, "%s %.*s: %s\n", ts, static_cast<int>(program.size()), program.data(), line.c_str());
  std::fflush(stderr);
}

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

}  // namespace

void WaitForStopSignal() {
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGPIPE, SIG_IGN);
  while (!g_stop) {
    struct timespec ts = {0, 100'000'000};
    nanosleep(&ts, nullptr);
  }
}

bool SplitHostPort(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  *host = text.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return absl::SimpleAtoi(text.substr(colon + 1), port) && *port >= 0 && *port <= 65535;
}

std::optional<Topology> LoadClusterTopology(const std::string& path, v1::ClusterDescription* description,
                                            const std::function<void(const std::string&)>& log) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> loaded = LoadClusterDescription(path, &diagnostics);
  if (!loaded.ok()) {
    for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    if (diagnostics.empty()) log(std::string(loaded.status().message()));
    return std::nullopt;
  }
  *description = std::move(*loaded);
  absl::StatusOr<Topology> topology = Topology::Build(*description);
  if (!topology.ok()) {
    log(absl::StrCat(path, ": ", topology.status().message()));
    return std::nullopt;
  }
  log(absl::StrCat("cluster ", topology->cluster_name(), ": ", topology->nodes().size(), " nodes, ",
                   topology->racks().size(), " racks, ", topology->domains().size(), " NVLink domains, ",
                   topology->total_gpus(), " GPUs"));
  return std::move(*topology);
}

}  // namespace rackwise::daemon
