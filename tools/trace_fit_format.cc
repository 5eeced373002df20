// See trace_fit_format.h.
#include "trace_fit_format.h"

#include <algorithm>
#include <cstdio>

namespace rackwise::cli {

void WarnTraceMisfits(const TraceFit& fit, const std::string& who, const std::string& cluster) {
  if (fit.misfit_jobs == 0) return;
  std::fprintf(stderr, "%s: warning: %d of %d jobs (%.1f%%) can never run on %s; a replay will reject them\n",
               who.c_str(), fit.misfit_jobs, fit.jobs, 100.0 * fit.misfit_jobs / std::max(1, fit.jobs),
               cluster.c_str());
  for (const TraceMisfit& m : fit.shapes) {
    std::fprintf(
        stderr, "%s: warning:   %d job(s) of %d GPUs%s%s: %s\n", who.c_str(), m.jobs, m.gpus,
        m.gpus_per_node > 0 ? (", " + std::to_string(m.gpus_per_node) + " per node").c_str() : "",
        m.watts_per_gpu > 0 ? (", " + std::to_string(static_cast<int>(m.watts_per_gpu)) + " W per GPU").c_str() : "",
        m.reason.c_str());
  }
}

nlohmann::ordered_json TraceMisfitsJson(const TraceFit& fit) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TraceMisfit& m : fit.shapes) {
    out.push_back({{"gpus", m.gpus},
                   {"gpus_per_node", m.gpus_per_node},
                   {"watts_per_gpu", m.watts_per_gpu},
                   {"jobs", m.jobs},
                   {"reason", m.reason}});
  }
  return out;
}

}  // namespace rackwise::cli
