#include "daemon_support.h"

#include <cstdio>
#include <ctime>

#include "absl/strings/numbers.h"

namespace rackwise::k8s {

void LogLine(absl::string_view program, const std::string& line) {
  std::time_t t = std::time(nullptr);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  std::fprintf(stderr, "%s %.*s: %s\n", ts, static_cast<int>(program.size()), program.data(), line.c_str());
  std::fflush(stderr);
}

bool SplitHostPort(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  *host = text.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return absl::SimpleAtoi(text.substr(colon + 1), port) && *port >= 0 && *port <= 65535;
}

}  // namespace rackwise::k8s
