// The placement policies the simulator compares (see rackwise/simulator.h for what each one does).
// Internal to the simulator: each turns a trace job and the ledger's current state into GPUs to commit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rackwise/allocation.h"
#include "rackwise/ledger.h"
#include "rackwise/simulator.h"
#include "rackwise/trace.h"

namespace rackwise::sim {

enum class Outcome {
  kStart,  // `choice` holds where the job goes
  kWait,   // it does not fit now
  kNever,  // it can never run on this cluster under this policy
};

struct Choice {
  std::vector<NodeGpus> nodes;  // any order; the simulator sorts
  Milliwatts per_gpu = 0;       // 0: the node type's draw
};

// How long a job has been pending and when its fewest NVLink domains are expected to be free (rackwise's
// `preferred` locality waits for them while that is cheaper than spreading: PreferredHoldsOut).
struct Pending {
  double waited_s = 0;
  std::optional<double> fewest_in_s;  // unset: not worked out (the job is not a `preferred` head the rule may hold)
};

class Policy {
 public:
  virtual ~Policy() = default;
  // `pending`: how long the job has waited, for rackwise's `preferred` locality.
  // `backfill`: the job is not the queue head but a backfill candidate (rackwise starts a `preferred` one only
  // in its fewest NVLink domains: it will get a reservation for them when it reaches the head).
  virtual Outcome Choose(const Ledger& ledger, const TraceJob& job, const Pending& pending, bool backfill,
                         Choice* choice) = 0;
  // How the simulator commits: kEnforce (the policy promises to respect caps) or kRecover (power-unaware).
  virtual CommitMode commit_mode() const { return CommitMode::kRecover; }
  // Whether the policy keeps a `preferred` head to its fewest domains while waiting for them is cheaper than
  // spreading (PreferredHoldsOut): rackwise only. The baselines know no locality and read none of rackwise's
  // locality knobs: the replay spares them the walk and the wake-ups.
  virtual bool holds_out_for_fewest() const { return false; }
};

std::unique_ptr<Policy> MakePolicy(SimPolicy policy, const Topology& topology, const SimOptions& options);

// Helpers shared by the baselines.
// ceil(gpus / largest domain) the same way the placer counts it (gpus_per_node shrinks a domain's usable size),
// the least over every node type that can take the job: the physical minimum a spread job is slowed against.
int MinDomains(const Topology& topology, int gpus, int gpus_per_node);
// Per-rack GPU limits for static-cap: what the rack's cap, and its share of every power domain's cap above it,
// allow at the node type's full-load draw per GPU.
std::vector<int> StaticRackLimits(const Topology& topology);
// Stable hashes for reproducible choices (spread's tie-break, the split replay's job owners): FNV-1a of a string,
// and SplitMix64's finaliser to spread its bits.
uint64_t Fnv1a(const std::string& s);
uint64_t Mix(uint64_t z);

}  // namespace rackwise::sim
