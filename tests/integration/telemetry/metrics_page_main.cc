// rackwise_test_metrics_page PORT FILE: serves FILE's current content at http://127.0.0.1:PORT/metrics in the
// Prometheus text format (read afresh on every scrape), for tests that stand in for a DCGM exporter. Exits on
// SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <httplib.h>

namespace {
httplib::Server* g_server = nullptr;
void Stop(int) {
  if (g_server) g_server->stop();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PORT FILE\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const std::string file = argv[2];
  httplib::Server server;
  g_server = &server;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    res.set_content(text.str(), "text/plain; version=0.0.4; charset=utf-8");
  });
  std::signal(SIGTERM, Stop);
  std::signal(SIGINT, Stop);
  if (!server.listen("127.0.0.1", port)) {
    std::fprintf(stderr, "cannot listen on 127.0.0.1:%d\n", port);
    return 1;
  }
  return 0;
}
