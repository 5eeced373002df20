// What the simulated hardware really draws: every rack's and power domain's idle watts plus what each running
// job's GPUs draw, which is the trace's measured_watts_per_gpu when the job has one and what the ledger charges
// it otherwise. The meter integrates this against the caps (so a job drawing more than it declared shows up as
// an excursion), and with SimOptions::telemetry it is what the replay's node power query answers.
#pragma once

#include <vector>

#include "rackwise/allocation.h"
#include "rackwise/ledger.h"
#include "rackwise/telemetry.h"
#include "rackwise/topology.h"

namespace rackwise::sim {

class RealDraw {
 public:
  explicit RealDraw(const Topology& topology);

  // A job's GPUs start (sign +1) or stop (sign -1) drawing. `measured_per_gpu` 0: it draws what `ledger` charges.
  void Add(const Ledger& ledger, const Allocation& allocation, Milliwatts measured_per_gpu, int sign);

  Milliwatts rack(RackId rack) const { return rack_[rack]; }
  Milliwatts power_domain(PowerDomainId domain) const { return pd_[domain]; }
  // Every node's GPU watts as a node power query reports them (fresh, one per node), for MeasureRacks to add
  // the idle watts to: the same path a face's Prometheus answer takes.
  const PowerReadings& readings() const { return readings_; }

 private:
  const Topology& topology_;
  std::vector<Milliwatts> node_gpu_, rack_, pd_;
  PowerReadings readings_;
};

}  // namespace rackwise::sim
