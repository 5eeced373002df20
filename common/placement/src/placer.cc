// Placer::Place: tries each node type the job may use, plans domains, picks nodes, and assembles a decision;
// or explains, node by node, why the job cannot start. See placer.h for the objectives.
#include "rackwise/placer.h"

#include <algorithm>
#include <bit>

#include "absl/container/inlined_vector.h"

#include "capacity_now.h"
#include "domain_planner.h"
#include "node_picker.h"
#include "placement_context.h"
#include "rail_set.h"
#include "refusal_builder.h"
#include "request_setup.h"
#include "type_minimum.h"

namespace rackwise {
namespace {

using internal::DomainPlan;
using internal::PlacementContext;

// `fewest`: the fewest domains over every type the job may use (type_minimum.h).
PlacementDecision Assemble(const PlacementContext& ctx, const DomainPlan& plan, int fewest) {
  const Topology& t = ctx.topology();
  PlacementDecision d;
  d.per_gpu = ctx.per_gpu();
  d.domains = static_cast<int>(plan.takes.size());
  // The minimum counts described caps; a cap raised at run time can let a job do better than that.
  d.min_domains = d.domains == 1 ? 1 : std::min(fewest, d.domains);
  // Sized up front (a domain gives at most its nodes, each at least one GPU): a 144-GPU decision otherwise grows
  // these vectors a dozen times.
  size_t most_nodes = 0;
  for (const internal::DomainTake& take : plan.takes)
    most_nodes += std::min<size_t>(take.gpus, t.domains()[take.domain].nodes.size());
  d.nodes.reserve(most_nodes);
  for (const internal::DomainTake& take : plan.takes)
    internal::PickNodes(ctx, take.domain, take.gpus, plan.rail_set, &d.nodes);
  if (ctx.k() == 0) internal::ShareRails(ctx.ledger(), &d.nodes);
  std::sort(d.nodes.begin(), d.nodes.end(), [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  d.racks.reserve(plan.takes.size());  // a domain usually lies in one rack
  for (const NodeGpus& ng : d.nodes) {
    const RackId r = t.nodes()[ng.node].rack;
    const Milliwatts added = GpuCount(ng.gpus) * ctx.per_gpu();
    auto it = std::find_if(d.racks.begin(), d.racks.end(), [r](const RackPower& rp) { return rp.rack == r; });
    if (it == d.racks.end()) {
      d.racks.push_back({r, added});
    } else {
      it->added += added;
    }
    if (ng.gpus != d.nodes.front().gpus) d.rail_aligned = false;
  }
  std::sort(d.racks.begin(), d.racks.end(), [](const RackPower& a, const RackPower& b) { return a.rack < b.rack; });
  absl::InlinedVector<ScalableUnitId, 16> sus;
  for (const RackPower& rp : d.racks) sus.push_back(t.racks()[rp.rack].scalable_unit);
  std::sort(sus.begin(), sus.end());
  d.scalable_units = static_cast<int>(std::unique(sus.begin(), sus.end()) - sus.begin());
  return d;
}

// One scratch per thread, kept between decisions: building one zeroes an array over every rack and power domain,
// which at 131k GPUs cost more than the rest of a multi-domain search's set-up. Greedy clears what it touched
// before each use, so what a previous decision left there does not count.
PowerScratch& ThreadScratch(const Topology& t) {
  thread_local PowerScratch scratch(0, 0);
  scratch.Resize(t.racks().size(), t.power_domains().size());
  return scratch;
}

// Of two one-domain plans (of different node types), whether `a` fits tighter: fewer GPUs left free in the domain
// it takes, then the smaller domain, else the first type (description order) stays. Why: a job that a small domain
// holds whole should leave the large ones to the jobs that only they hold in their fewest domains (a 4-GPU job
// on an idle HGX node, not in the NVL72 rack a 64-GPU `required` job waits for), while a fragment that already
// exists, in either type, is the best home of all (objective 5, across types as within one).
bool TighterSingleDomain(const Ledger& ledger, const DomainPlan& a, const DomainPlan& b) {
  const DomainId da = a.takes.front().domain, db = b.takes.front().domain;
  const int free_a = ledger.domain_free_gpus(da), free_b = ledger.domain_free_gpus(db);
  if (free_a != free_b) return free_a < free_b;
  return ledger.topology().domains()[da].gpus < ledger.topology().domains()[db].gpus;
}

// Fewest domains, then scalable units, then racks.
bool Better(const PlacementDecision& a, const PlacementDecision& b) {
  if (a.domains != b.domains) return a.domains < b.domains;
  if (a.scalable_units != b.scalable_units) return a.scalable_units < b.scalable_units;
  return a.racks.size() < b.racks.size();
}

}  // namespace

absl::StatusOr<PlacementOutcome> Placer::Place(const Ledger& ledger, const PlacementRequest& request) {
  const Topology& t = ledger.topology();
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(t, request);
  if (!setup.ok()) return setup.status();
  auto context = [&](NodeTypeId type, Locality locality) {
    return PlacementContext(ledger, request, locality, type, internal::PerGpuFor(t, request, type), setup->allowed);
  };
  // One domain, of any type, is the fewest there is. Locality none keeps whole domains free: the tightest partly
  // used domain that holds the job whole (no needless NVLink crossing), else the smallest fragments. Across types
  // too the tightest fit wins (TighterSingleDomain).
  std::optional<std::pair<NodeTypeId, DomainPlan>> one;
  for (NodeTypeId type : setup->types) {
    if (ShareGranule(request) > t.node_types()[type].gpus) continue;
    const PlacementContext ctx = context(type, setup->locality);
    if (ctx.EffectiveDomainSize() <= 0 || !ctx.SomeRackPowersAShare()) continue;
    std::optional<DomainPlan> plan = internal::PlanSingleDomain(ctx, setup->locality == Locality::kNone);
    if (plan && (!one || TighterSingleDomain(ledger, *plan, one->second))) one.emplace(type, std::move(*plan));
  }
  if (one) return PlacementOutcome{Assemble(context(one->first, setup->locality), one->second, 1)};
  // Several domains. `required` waits for the fewest the cluster can give over every type the job may use;
  // preferred and none take the fewest they can get now.
  const internal::TypeMinimum fewest = internal::FewestDomainsOverTypes(ledger, request, *setup);
  std::optional<PlacementDecision> best;
  bool locality_blocked = false;
  for (NodeTypeId type : setup->types) {
    if (ShareGranule(request) > t.node_types()[type].gpus) continue;
    // A backfilled job that may spread still takes only its fewest domains on a type that can give them.
    const bool required =
        setup->locality == Locality::kRequired || (setup->fewest_types_required && fewest.Gives(type));
    const PlacementContext ctx = context(type, required ? Locality::kRequired : setup->locality);
    if (ctx.EffectiveDomainSize() <= 0) continue;
    // With no type that can ever hold it, this type's own minimum (a cap raised at run time may let it fit).
    const int insist = fewest.domains > 0 ? fewest.domains : ctx.MinDomains();
    if (required && fewest.per_type[type] > insist) {
      locality_blocked = true;  // this type can never give the fewest
      continue;
    }
    if (!ctx.SomeRackPowersAShare()) continue;  // no plan can take a GPU of this type now
    // Not enough free GPUs, or not enough that the root power domains can power: no plan can cover the job, and
    // the search would visit every domain to find that out. The power domains below: the search asks
    // CapacityNowAtMost itself, when it has to.
    if (!ctx.restricted() && internal::CapacityNowAtMostByRoots(ledger, request, type) < request.gpus) continue;
    std::optional<DomainPlan> plan = internal::PlanMultiDomain(ctx, &ThreadScratch(t));
    if (plan && required && static_cast<int>(plan->takes.size()) > insist) {
      locality_blocked = true;  // the GPUs exist, but not inside the fewest domains: wait
      plan.reset();
    }
    if (!plan) continue;
    PlacementDecision decision = Assemble(ctx, *plan, insist);
    if (!best || Better(decision, *best)) best = std::move(decision);
  }
  if (best) return PlacementOutcome{std::move(*best)};
  if (!request.report_refusal) {
    PlacementRefusal quiet;
    quiet.total_nodes = static_cast<int>(t.nodes().size());
    return PlacementOutcome{std::move(quiet)};
  }
  return PlacementOutcome{internal::BuildRefusal(ledger, request, *setup, locality_blocked ? &fewest : nullptr)};
}

absl::StatusOr<Placer::Fewest> Placer::FewestDomains(const Ledger& ledger, const PlacementRequest& request) {
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok()) return setup.status();
  const internal::TypeMinimum m = internal::FewestDomainsOverTypes(ledger, request, *setup);
  Fewest fewest{m.domains, m.type, {}, internal::DescribeTypeMinimum(ledger.topology(), request, m)};
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(m.per_type.size()); ++type)
    if (m.Gives(type)) fewest.types.push_back(type);
  return fewest;
}

std::optional<NodeReason> Placer::FilterNode(const Ledger& ledger, const PlacementRequest& request, NodeId node) {
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok() || node < 0 || node >= static_cast<NodeId>(ledger.topology().nodes().size()))
    return NodeReason::kNotAllowed;
  return internal::NodeBlock(ledger, request, *setup, node);
}

absl::Status Placer::CheckRequest(const Topology& topology, const PlacementRequest& request) {
  return internal::SetUpRequest(topology, request).status();
}

absl::Status Placer::FilterNodes(const Ledger& ledger, const PlacementRequest& request, absl::Span<const NodeId> nodes,
                                 std::vector<std::optional<NodeReason>>* out) {
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok()) {
    out->assign(nodes.size(), NodeReason::kNotAllowed);
    return setup.status();
  }
  internal::NodeBlocks(ledger, request, *setup, nodes, out);
  return absl::OkStatus();
}

}  // namespace rackwise
