// The fewest NVLink domains over every node type a job may use. See type_minimum.h.
#include "type_minimum.h"

#include "absl/strings/str_format.h"
#include "placement_context.h"

namespace rackwise::internal {

TypeMinimum FewestDomainsOverTypes(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup) {
  const Topology& t = ledger.topology();
  TypeMinimum m;
  m.per_type.assign(t.node_types().size(), 0);
  m.by_size.assign(t.node_types().size(), 0);
  m.domain_gpus.assign(t.node_types().size(), 0);
  for (NodeTypeId type : setup.types) {
    if (ShareGranule(request) > t.node_types()[type].gpus) continue;
    // Over the nodes the job may ever use, not only those free now (RequestSetup::eligible).
    const PlacementContext ctx(ledger, request, setup.locality, type, PerGpuFor(t, request, type), setup.eligible());
    m.per_type[type] = ctx.FewestDomainsEver();
    m.by_size[type] = ctx.DomainsBySize();
    m.domain_gpus[type] = ctx.EffectiveDomainSize();
    if (m.per_type[type] > 0 && (m.domains == 0 || m.per_type[type] < m.domains)) {
      m.domains = m.per_type[type];
      m.type = type;
    }
  }
  return m;
}

std::string DescribeTypeMinimum(const Topology& t, const PlacementRequest& request, const TypeMinimum& m) {
  if (m.domains == 0) return "";
  std::string out =
      absl::StrFormat("the fewest NVLink domains this cluster can give %d GPUs is %d, on %s (domains of %d GPUs",
                      request.gpus, m.domains, t.node_types()[m.type].name, m.domain_gpus[m.type]);
  if (m.domains > m.by_size[m.type])
    absl::StrAppendFormat(&out, "; %d by size, but the power caps allow no fewer than %d", m.by_size[m.type],
                          m.domains);
  out += ")";
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(m.per_type.size()); ++type) {
    if (type == m.type || m.per_type[type] <= m.domains) continue;
    absl::StrAppendFormat(&out, "; %s would need %d", t.node_types()[type].name, m.per_type[type]);
  }
  return out;
}

}  // namespace rackwise::internal
