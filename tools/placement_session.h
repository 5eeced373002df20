// What `rackwise place` and `rackwise explain` share: the flags that describe a job, and loading a cluster
// description plus an optional state file into a ledger, with diagnostics printed the way `validate` does.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <CLI/CLI.hpp>

#include "rackwise/ledger.h"
#include "rackwise/oversubscription.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"
#include "rackwise/telemetry.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::cli {

struct JobFlags {
  int gpus = 0;
  int gpus_per_node = 0;
  std::string locality;  // required|preferred|none; empty: the policy's default
  double watts_per_gpu = 0;
  std::string node_type;
  std::string nodes;    // hostlist the job may use
  std::string exclude;  // hostlist the job must not use
  std::string id = "job";
  double waited_s = 0;  // how long the job has waited (policy.preferred_wait_s)
};

struct SessionFlags {
  std::string cluster;  // empty: the built-in example
  std::string state;
  bool json = false;
  bool no_telemetry = false;  // skip the description's telemetry: estimates only
};

void AddJobFlags(CLI::App* app, JobFlags* job);
void AddSessionFlags(CLI::App* app, SessionFlags* session);

// A loaded cluster: owns the topology the ledger points into.
struct Session {
  v1::ClusterDescription description;
  v1::ClusterState state;  // as read (empty without --state)
  std::unique_ptr<Topology> topology;
  std::unique_ptr<Ledger> ledger;
};

// Loads description and state; on error prints `FILE:LINE: message` lines to stderr and returns nullopt.
std::optional<Session> LoadSession(const SessionFlags& flags);

// Translates the flags; on error prints a message to stderr and returns nullopt.
std::optional<PlacementRequest> BuildRequest(const JobFlags& job, const Topology& topology);

// What place and explain both do first: parse the flags, load the cluster and state, and place the job.
struct PlacementRun {
  SessionFlags flags;
  Session session;
  PlacementRequest request;
  PlacementOutcome outcome;
  MeasuredDraw measured;  // what telemetry gave the ledger before placing (state kOff: none)
  // policy.oversubscribe_pct as the faces apply it, with the telemetry state measured: the outcome's watts are the
  // counted ones when applied; why_not says why not when the policy asks for it.
  OversubscribedWatts oversubscribed;
};
// Returns the run, or the exit code to end with (after printing why).
std::variant<PlacementRun, int> ParseAndPlace(int argc, char** argv, const std::string& command,
                                              const std::string& summary);

}  // namespace rackwise::cli
