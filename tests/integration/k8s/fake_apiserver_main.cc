// rackwise_test_fake_apiserver: the fake API server (tests/support/rackwise/testing/fake_api_server.h, which
// lists what it serves) as a process, over plain HTTP on loopback, with its /_test control routes: for
// tests/integration/slurm/test_one_budget.sh, dra_process_test.cc and steering_process_test.cc.
//
//   --nodes NAME[,NAME...]  the Node objects (all Ready, 8 allocatable GPUs)
//   --port PORT             0 (the default): a free port
//   --objects FILE          a JSON array of objects (as recorded from a real API server) to seed its collections
//
// Prints "listening on 127.0.0.1:PORT" once serving, then serves until killed.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rackwise/testing/fake_api_server.h"

namespace {

using rackwise::testing::FakeApiServer;

int Usage() {
  std::fprintf(stderr,
               "usage: rackwise_test_fake_apiserver --nodes NAME[,NAME...] [--port PORT (0: any)] [--objects FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  FakeApiServer::Options options;
  options.test_control_routes = true;
  std::string objects_file;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    if (flag == "--nodes") {
      std::stringstream in(argv[i + 1]);
      for (std::string n; std::getline(in, n, ',');)
        if (!n.empty()) options.nodes.push_back(n);
    } else if (flag == "--objects") {
      objects_file = argv[i + 1];
    } else if (flag == "--port") {
      options.port = std::atoi(argv[i + 1]);
      if (options.port < 0 || options.port > 65535) return Usage();
    } else {
      return Usage();
    }
  }
  if (options.nodes.empty()) return Usage();
  signal(SIGPIPE, SIG_IGN);  // a watch client that died: the write fails, the stream ends
  FakeApiServer server(std::move(options));
  if (!objects_file.empty()) {
    std::ifstream in(objects_file);
    const FakeApiServer::Json objects = FakeApiServer::Json::parse(in, nullptr, false);
    const absl::Status seeded = in ? server.SeedObjects(objects) : absl::InvalidArgumentError("cannot read JSON");
    if (!seeded.ok()) {
      std::fprintf(stderr, "%s: %s\n", objects_file.c_str(), std::string(seeded.message()).c_str());
      return 2;
    }
  }
  if (absl::Status started = server.Start(); !started.ok()) {
    std::fprintf(stderr, "%s\n", std::string(started.message()).c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%d\n", server.port());
  std::fflush(stdout);
  for (;;) pause();  // served from the server's threads; the test ends it with a signal
}
