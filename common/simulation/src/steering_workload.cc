// The steering replay's workload: a saturated backlog with power that varies over each job's life. See
// steering_replay.h.
#include <algorithm>
#include <random>

#include "rackwise/steering_replay.h"

namespace rackwise {
namespace {

// Job sizes in GPUs with their weights: parts of an NVLink domain, one domain, and a few domains.
std::vector<std::pair<int, double>> Sizes(const NodeType& type, int domain_gpus) {
  const int node = type.gpus;
  std::vector<std::pair<int, double>> out = {{node, 0.3}, {2 * node, 0.25}, {4 * node, 0.2}};
  if (domain_gpus > 4 * node) out.push_back({domain_gpus / 2, 0.15});
  out.push_back({domain_gpus > 4 * node ? domain_gpus : 8 * node, 0.1});
  return out;
}

double PhaseShare(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const double kind = u(rng);
  if (kind < 0.5) return 0.85 + 0.15 * u(rng);   // compute-bound
  if (kind < 0.85) return 0.55 + 0.30 * u(rng);  // mixed
  return 0.35 + 0.20 * u(rng);                   // communication, I/O, checkpoints
}

}  // namespace

std::vector<SteeringReplayJob> GenerateSteeringWorkload(const Topology& t, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SteeringReplayJob> out;
  if (t.node_types().empty()) return out;
  const NodeType& type = t.node_types()[0];
  const auto sizes = Sizes(type, std::max(type.gpus, t.max_domain_gpus(0)));
  std::vector<double> weights;
  for (const auto& [gpus, w] : sizes) weights.push_back(w);
  std::discrete_distribution<int> size(weights.begin(), weights.end());
  std::uniform_real_distribution<double> hours(0.5, 6), segment(300, 1800);
  for (int i = 0; i < count; ++i) {
    SteeringReplayJob j;
    j.gpus = sizes[size(rng)].first;
    j.gpus_per_node = type.gpus;
    j.duration_s = hours(rng) * 3600;
    double at = 0;
    while (at < 4 * 3600) {
      j.profile.push_back({at, PhaseShare(rng)});
      at += segment(rng);
    }
    j.profile_period_s = at;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace rackwise
