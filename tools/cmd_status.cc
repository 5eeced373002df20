// `rackwise status`: a `top`-like table of racks and power domains (draw, cap, usable cap, headroom, jobs) from
// a description plus a state file (--cluster F --state S; the Slurm plugin keeps one in StateSaveLocation), or
// from a running extender's gRPC ClusterState (--grpc host:port). --watch S redraws every S seconds.
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>

#include "adopt/power_status.h"
#include "command.h"
#include "placement_session.h"

#include <grpcpp/grpcpp.h>

#include "rackwise/v1/placement_service.grpc.pb.h"

namespace rackwise::cli {
namespace {

std::optional<adopt::PowerStatus> FromGrpc(const std::string& address) {
  auto stub = v1::Placement::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ClusterStateResponse response;
  grpc::Status status = stub->ClusterState(&context, v1::ClusterStateRequest(), &response);
  if (!status.ok()) {
    std::fprintf(stderr, "rackwise status: %s: %s\n", address.c_str(), status.error_message().c_str());
    return std::nullopt;
  }
  adopt::PowerStatus s = adopt::StatusFromClusterState(response);
  s.source = address;
  return s;
}

std::optional<adopt::PowerStatus> FromFiles(const SessionFlags& flags) {
  std::optional<Session> session = LoadSession(flags);
  if (!session) return std::nullopt;
  adopt::PowerStatus s = adopt::StatusFromLedger(*session->ledger);
  s.source = flags.state.empty() ? "no state file: idle draw only" : flags.state;
  return s;
}

int RunStatus(int argc, char** argv) {
  CLI::App app{"Draw, cap and headroom of every rack and power domain, from a state file or the extender", "status"};
  SessionFlags flags;
  std::string grpc;
  double watch = 0;
  AddSessionFlags(&app, &flags);
  auto* grpc_option = app.add_option("--grpc", grpc, "ask a running rackwise-extender (host:port) instead");
  grpc_option->excludes(app.get_option("--state"));
  app.add_option("--watch", watch, "redraw every this many seconds until interrupted")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (flags.cluster.empty()) flags.cluster = DefaultClusterPath();
  for (;;) {
    std::optional<adopt::PowerStatus> status = grpc.empty() ? FromFiles(flags) : FromGrpc(grpc);
    if (!status) return kExitInvalidInput;
    if (watch > 0) std::fputs("\x1b[H\x1b[2J", stdout);  // clear the screen, like top
    if (flags.json) {
      std::printf("%s\n", adopt::StatusJson(*status).dump(2).c_str());
    } else {
      std::fputs(adopt::StatusTable(*status).c_str(), stdout);
    }
    std::fflush(stdout);
    if (watch <= 0) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
  }
}

}  // namespace

RACKWISE_REGISTER_COMMAND(status, "status", "draw, cap and headroom of racks and power domains (state file or gRPC)",
                          RunStatus);

}  // namespace rackwise::cli
