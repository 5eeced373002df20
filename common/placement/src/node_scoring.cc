// Placer::ScoreNode(s): a 0..10 score per node for kube-scheduler's prioritize verb. The same preferences as
// Place, expressed per node: a domain that fits the job tightly, a rack already in use, the job's GPU indices
// free, and power left after placing, weighted by the policy; ScoreNodes then puts Place's own pick on top.
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <variant>
#include <vector>

#include "rackwise/placer.h"
#include "request_setup.h"

namespace rackwise {

namespace {

constexpr int kMaxScore = 10;

// What a score needs to know about a node's rack; the same for every node of the rack, so ScoreNodes works
// it out once per rack rather than once per node.
struct RackTerms {
  double packing = 0;       // share of the rack's GPUs in use
  Milliwatts headroom = 0;  // room left under the rack's and its power domains' caps
  Milliwatts cap = 1;
};

RackTerms RackTermsFor(const Ledger& ledger, RackId rack) {
  const Topology& t = ledger.topology();
  int rack_gpus = 0, rack_free = 0;
  for (NodeId m : t.racks()[rack].nodes) {
    rack_gpus += t.nodes()[m].gpus;
    rack_free += ledger.free_gpu_count(m);
  }
  RackTerms terms;
  terms.packing = rack_gpus > 0 ? 1.0 - static_cast<double>(rack_free) / rack_gpus : 0;
  terms.headroom = ledger.RackHeadroom(rack, t.policy().power_reserve_fraction);
  terms.cap = std::max<Milliwatts>(1, ledger.rack_cap(rack));
  return terms;
}

int ScoreWithRack(const Ledger& ledger, const PlacementRequest& request, NodeId node, const RackTerms& rack) {
  const Topology& t = ledger.topology();
  const Node& n = t.nodes()[node];
  const NvlinkDomain& dom = t.domains()[n.domain];
  const int want = std::max(request.gpus_per_node > 0 ? request.gpus_per_node : request.gpus, 1);

  // Domain packing: 1 when the domain's free GPUs match what the job needs, falling as more would stay idle.
  const int domain_free = ledger.domain_free_gpus(n.domain);
  const int job_in_domain = std::min(request.gpus, dom.gpus);
  double domain_packing = 0;
  if (domain_free >= job_in_domain) {
    domain_packing = 1.0 - static_cast<double>(domain_free - job_in_domain) / std::max(1, dom.gpus);
  } else {
    domain_packing = 0.5 * static_cast<double>(domain_free) / std::max(1, job_in_domain);  // spills over
  }
  // Rail alignment: the aligned block of `want` indices (0..want-1, want..2want-1, ...) is free on this node,
  // so pods of one job that each take `want` GPUs can share rails.
  double rail = 0;
  const GpuMask free = ledger.free_gpus(node);
  if (want < n.gpus) {
    const GpuMask block = (GpuMask{1} << want) - 1;
    for (int start = 0; start + want <= n.gpus; start += want)
      if (((block << start) & ~free) == 0) rail = 1;
  } else {
    rail = GpuCount(free) >= n.gpus ? 1 : 0;
  }
  // Power headroom after placing `want` GPUs here, as a share of the rack's cap.
  const Milliwatts after = rack.headroom - want * internal::PerGpuFor(t, request, n.type);
  const double headroom = std::clamp(static_cast<double>(after) / static_cast<double>(rack.cap), 0.0, 1.0);

  const PlacementWeights& w = t.policy().weights;
  const double total = w.domain_packing + w.rack_packing + w.rail_alignment + w.power_headroom;
  const double score = (w.domain_packing * domain_packing + w.rack_packing * rack.packing + w.rail_alignment * rail +
                        w.power_headroom * headroom) /
                       total;
  return std::clamp(static_cast<int>(std::lround(score * kMaxScore)), 0, kMaxScore);
}

// The preference terms only approximate Place's objectives (and round to 0..10, so they tie often). So that
// kube-scheduler's best node is the core's choice, the nodes Place picks among the candidates score 10, the rest
// of their NVLink domains at most 9 and every other node at most 8.
void AnchorScoresOnPlace(const Ledger& ledger, const PlacementRequest& request, absl::Span<const NodeId> nodes,
                         const std::vector<std::optional<NodeReason>>& blocks, std::vector<int>* scores) {
  const Topology& t = ledger.topology();
  PlacementRequest among = request;
  among.report_refusal = false;
  among.allowed_nodes.clear();
  // Every known candidate, busy ones included: `required` counts its fewest domains over the nodes it may use,
  // not over those free right now, so dropping busy nodes would change the decision.
  const NodeId count = static_cast<NodeId>(t.nodes().size());
  for (NodeId n : nodes) {
    if (n >= 0 && n < count) among.allowed_nodes.push_back(n);
  }
  if (among.allowed_nodes.empty()) return;  // (empty would mean every node)
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(ledger, among);
  const PlacementDecision* decision = outcome.ok() ? std::get_if<PlacementDecision>(&*outcome) : nullptr;
  // Sorted lists of the decision's nodes and domains (one node for a pod), not masks over the whole cluster built
  // on every prioritize call.
  std::vector<NodeId> picked;
  std::vector<DomainId> picked_domains;
  if (decision != nullptr) {
    for (const NodeGpus& ng : decision->nodes) {
      picked.push_back(ng.node);
      picked_domains.push_back(t.nodes()[ng.node].domain);
    }
  }
  std::sort(picked.begin(), picked.end());
  std::sort(picked_domains.begin(), picked_domains.end());
  auto contains = [](const auto& list, auto value) { return std::binary_search(list.begin(), list.end(), value); };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (blocks[i]) continue;
    int& score = (*scores)[i];
    if (contains(picked, nodes[i])) {
      score = kMaxScore;
    } else {
      score = std::min(score, contains(picked_domains, t.nodes()[nodes[i]].domain) ? kMaxScore - 1 : kMaxScore - 2);
    }
  }
}

}  // namespace

int Placer::ScoreNode(const Ledger& ledger, const PlacementRequest& request, NodeId node) {
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok()) return 0;
  if (node < 0 || node >= static_cast<NodeId>(ledger.topology().nodes().size()) ||
      internal::NodeBlock(ledger, request, *setup, node)) {
    return 0;
  }
  return ScoreWithRack(ledger, request, node, RackTermsFor(ledger, ledger.topology().nodes()[node].rack));
}

void Placer::ScoreNodes(const Ledger& ledger, const PlacementRequest& request, absl::Span<const NodeId> nodes,
                        std::vector<int>* out) {
  out->assign(nodes.size(), 0);
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok()) return;
  std::vector<std::optional<NodeReason>> blocks;
  internal::NodeBlocks(ledger, request, *setup, nodes, &blocks);
  std::vector<std::optional<RackTerms>> racks(ledger.topology().racks().size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (blocks[i]) continue;  // also unknown ids
    const RackId rack_id = ledger.topology().nodes()[nodes[i]].rack;
    std::optional<RackTerms>& rack = racks[rack_id];
    if (!rack) rack = RackTermsFor(ledger, rack_id);
    (*out)[i] = ScoreWithRack(ledger, request, nodes[i], *rack);
  }
  AnchorScoresOnPlace(ledger, request, nodes, blocks, out);
}

}  // namespace rackwise
