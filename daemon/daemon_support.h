// Small pieces the daemons (rackwise-extender, rackwise-node-agent, rackwise-ledger) share in their main(): a
// timestamped log line on stderr, HOST:PORT flags, waiting for SIGTERM, and loading the cluster description.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::daemon {

// "<UTC time> <program>: <line>" on stderr, flushed (container logs are read live).
void LogLine(absl::string_view program, const std::string& line);

// "host:port", "[::1]:port" or ":port"; false when the port is missing or not in 0..65535.
bool SplitHostPort(const std::string& text, std::string* host, int* port);

// Blocks until SIGINT or SIGTERM; a closed peer (SIGPIPE) must not end the process.
void WaitForStopSignal();

// Loads and compiles the description at `path`; nullopt when either step fails, the reason given to `log` (or
// each diagnostic on stderr). Logs the cluster's size on success.
std::optional<Topology> LoadClusterTopology(const std::string& path, v1::ClusterDescription* description,
                                            const std::function<void(const std::string&)>& log);

}  // namespace rackwise::daemon
