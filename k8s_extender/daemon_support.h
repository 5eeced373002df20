// Small pieces the Kubernetes daemons (rackwise-extender, rackwise-node-agent) share in their main(): a
// timestamped log line on stderr, and HOST:PORT flags.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace rackwise::k8s {

// "<UTC time> <program>: <line>" on stderr, flushed (container logs are read live).
void LogLine(absl::string_view program, const std::string& line);

// "host:port", "[::1]:port" or ":port"; false when the port is missing or not in 0..65535.
bool SplitHostPort(const std::string& text, std::string* host, int* port);

}  // namespace rackwise::k8s
