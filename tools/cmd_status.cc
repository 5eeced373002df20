// `rackwise status`: a `top`-like table of racks and power domains (draw, cap, usable cap, headroom, jobs) from
// a description plus a state file (--cluster F --state S; the Slurm plugin keeps one in StateSaveLocation), or
// from a running extender's gRPC ClusterState (--grpc host:port); or each rack's draw split by owner (Slurm,
// Kubernetes, other) from the shared power ledger service (--ledger host:port). --watch S redraws every S seconds.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "absl/strings/ascii.h"
#include "adopt/ledger_status.h"
#include "adopt/power_status.h"
#include "command.h"
#include "ledger_tls.h"
#include "placement_session.h"

#include <grpcpp/grpcpp.h>

#include "rackwise/v1/ledger_service.grpc.pb.h"
#include "rackwise/v1/placement_service.grpc.pb.h"

namespace rackwise::cli {
namespace {

// One unary call with a 10 s deadline; an error is printed (naming `what`) and gives nullopt.
// `authorization`: the metadata of that name (a ledger that checks its callers wants "Bearer <token>"), if any.
template <typename Stub, typename Request, typename Response>
std::optional<Response> Ask(const std::string& what, Stub& stub,
                            grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
                            const std::string& authorization = "") {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  Response response;
  grpc::Status status = (stub.*rpc)(&context, Request(), &response);
  if (!status.ok()) {
    std::fprintf(stderr, "rackwise status: %s: %s\n", what.c_str(), status.error_message().c_str());
    return std::nullopt;
  }
  return response;
}

std::optional<adopt::PowerStatus> FromGrpc(const std::string& address) {
  auto stub = v1::Placement::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::optional<v1::ClusterStateResponse> response = Ask(address, *stub, &v1::Placement::Stub::ClusterState);
  if (!response) return std::nullopt;
  adopt::PowerStatus s = adopt::StatusFromClusterState(*response);
  s.source = address;
  return s;
}

std::optional<v1::StatusResponse> LedgerStatus(const std::string& address, const std::string& authorization) {
  auto stub = v1::PowerLedger::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  return Ask("ledger " + address, *stub, &v1::PowerLedger::Stub::Status, authorization);
}

// "Bearer <token>" from the ledger token file, checked as the faces check theirs (ledger_tls.h).
std::optional<std::string> BearerFromFile(const std::string& path) {
  absl::StatusOr<std::string> token = ledger::ReadTokenFile(path, "--ledger-token-file");
  if (!token.ok()) {
    std::fprintf(stderr, "rackwise status: %s\n", std::string(token.status().message()).c_str());
    return std::nullopt;
  }
  return "Bearer " + *token;
}

// Any replica answers Status, but only the leader holds the allocations: a follower's answer names the leader,
// which is asked in turn (one hop; the address shown is the one that answered).
std::optional<std::string> LedgerFrame(const std::string& address, bool json, const std::string& authorization) {
  std::optional<v1::StatusResponse> response = LedgerStatus(address, authorization);
  std::string source = address;
  if (response && !response->serving() && !response->leader_address().empty() &&
      response->leader_address() != address) {
    source = response->leader_address();
    response = LedgerStatus(source, authorization);
  }
  if (!response) return std::nullopt;
  return json ? adopt::LedgerStatusJson(*response, source).dump(2) + "\n" : adopt::LedgerStatusTable(*response, source);
}

std::optional<adopt::PowerStatus> FromFiles(const SessionFlags& flags) {
  std::optional<Session> session = LoadSession(flags);
  if (!session) return std::nullopt;
  adopt::PowerStatus s = adopt::StatusFromLedger(*session->ledger);
  s.source = flags.state.empty() ? "no state file: idle draw only" : flags.state;
  adopt::AddOversubscribed(session->state, &s);
  if (session->description.telemetry().on_overdraw() == v1::OVERDRAW_ACTION_LOWER_LIMITS)
    adopt::AddSteering(*session->ledger, &s);
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
  std::string ledger;
  app.add_option("--ledger", ledger, "each rack's draw by owner, from a rackwise-ledger replica (host:port)")
      ->excludes(app.get_option("--state"))
      ->excludes(grpc_option);
  std::string token_file;
  app.add_option("--ledger-token-file", token_file,
                 "a file whose first line is the bearer token the ledger knows this caller by (its access file)")
      ->needs(app.get_option("--ledger"));
  app.add_option("--watch", watch, "redraw every this many seconds until interrupted")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (flags.cluster.empty()) flags.cluster = DefaultClusterPath();
  std::string authorization;
  if (!token_file.empty()) {
    std::optional<std::string> bearer = BearerFromFile(token_file);
    if (!bearer) return kExitInvalidInput;
    authorization = *bearer;
  }
  // One frame: the ledger service's split by owner, or the racks and power domains.
  auto frame = [&]() -> std::optional<std::string> {
    if (!ledger.empty()) return LedgerFrame(ledger, flags.json, authorization);
    std::optional<adopt::PowerStatus> status = grpc.empty() ? FromFiles(flags) : FromGrpc(grpc);
    if (!status) return std::nullopt;
    return flags.json ? adopt::StatusJson(*status).dump(2) + "\n" : adopt::StatusTable(*status);
  };
  for (;;) {
    const std::optional<std::string> text = frame();
    if (!text) return kExitInvalidInput;
    if (watch > 0) std::fputs("\x1b[H\x1b[2J", stdout);  // clear the screen, like top
    std::fputs(text->c_str(), stdout);
    std::fflush(stdout);
    if (watch <= 0) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
  }
}

}  // namespace

RACKWISE_REGISTER_COMMAND(status, "status", "draw, cap and headroom of racks and power domains (state file or gRPC)",
                          RunStatus);

}  // namespace rackwise::cli
