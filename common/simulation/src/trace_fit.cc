// Does a trace fit a cluster? See rackwise/trace_fit.h.
#include "rackwise/trace_fit.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "rackwise/ledger.h"
#include "rackwise/placer.h"

namespace rackwise {

TraceFit CheckTraceFits(const Topology& topology, const std::vector<TraceJob>& jobs) {
  TraceFit fit;
  fit.jobs = static_cast<int>(jobs.size());
  const Ledger empty(topology);
  std::map<std::tuple<int, int, double>, int> shapes;  // -> index into fit.shapes, or -1 when it fits
  for (const TraceJob& job : jobs) {
    const auto key = std::make_tuple(job.gpus, job.gpus_per_node, job.watts_per_gpu);
    auto [it, fresh] = shapes.try_emplace(key, -1);
    if (fresh) {
      PlacementRequest r;
      r.id = job.id;
      r.gpus = job.gpus;
      r.gpus_per_node = job.gpus_per_node;
      r.watts_per_gpu = job.watts_per_gpu;
      r.locality = Locality::kNone;  // whether it can run at all, not how local
      absl::StatusOr<PlacementOutcome> out = Placer::Place(empty, r);
      std::string reason;
      if (!out.ok()) {
        reason = std::string(out.status().message());
      } else if (const auto* no = std::get_if<PlacementRefusal>(&*out); no && no->unresolvable) {
        reason = no->Message();
      }
      if (!reason.empty()) {
        it->second = static_cast<int>(fit.shapes.size());
        fit.shapes.push_back({job.gpus, job.gpus_per_node, job.watts_per_gpu, 0, reason});
      }
    }
    if (it->second >= 0) {
      ++fit.shapes[it->second].jobs;
      ++fit.misfit_jobs;
    }
  }
  std::sort(fit.shapes.begin(), fit.shapes.end(), [](const TraceMisfit& a, const TraceMisfit& b) {
    return std::tie(b.gpus, b.gpus_per_node, b.watts_per_gpu) < std::tie(a.gpus, a.gpus_per_node, a.watts_per_gpu);
  });
  return fit;
}

}  // namespace rackwise
