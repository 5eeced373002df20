// Power steering on the node: the agent follows the steered GPU limits the extender publishes on GET /limits
// (limits_document.h). Each round the follower fetches this node's entries and folds them into the pods the
// plan limits (limit_plan.h), so that one plan and one keeper (the leases) serve both the pods' declared watts
// and the extender's steering:
//  - an annotated pod in the document is limited to the lower of its annotation and its target;
//  - a pod without the annotation is limited while the extender holds it below what it declared, and given back
//    (its recorded default restored) when the target returns to its declared watts or the entry disappears;
//  - an entry for another incarnation of a pod (its uid differs) is ignored.
// Failing safe: when the extender cannot be reached or answers a bad document, the last good document stays in
// force (a steered limit is never lifted because the extender was briefly away); the error is logged once per
// change and counted. The extender never waits on a node: the agent polls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "limit_plan.h"
#include "limits_document.h"

namespace rackwise::node_agent {

// The pods to plan: `annotated` with this node's steering folded in (see above). Pure.
std::vector<PodWatts> SteerPods(std::vector<PodWatts> annotated, const k8s::LimitsDocument& document,
                                const std::string& node);

// Where the extender's /limits is and how to reach it.
struct LimitsSource {
  std::string url;         // http(s)://host:port[/prefix]; "/limits?node=<node>" is appended
  std::string ca_file;     // https: the CA to verify the extender with (empty: the system's)
  std::string token_file;  // sent as "Authorization: Bearer <token>" when set (read at every fetch)
  double timeout_s = 5;
};

// GETs one document: the body, or why not (Unavailable for transport and HTTP errors, InvalidArgument for a
// bad URL, token file or document).
absl::StatusOr<k8s::LimitsDocument> FetchLimits(const LimitsSource& source, const std::string& node);

// What the follower reports on the agent's /metrics.
struct SteeringStatus {
  uint64_t generation = 0;
  uint64_t fetch_failures = 0;
  std::vector<std::pair<std::string, int64_t>> steered;  // "namespace/name" -> target mW, below its declared watts
};

class LimitFollower {
 public:
  // `fetch` gets this node's document (FetchLimits in the daemon, a stub in tests).
  LimitFollower(std::string node, std::function<absl::StatusOr<k8s::LimitsDocument>()> fetch,
                std::function<void(const std::string&)> log);

  // Fetches (keeping the last good document on failure) and returns SteerPods of it.
  std::vector<PodWatts> Steer(std::vector<PodWatts> annotated);
  SteeringStatus status() const;

 private:
  std::string node_;
  std::function<absl::StatusOr<k8s::LimitsDocument>()> fetch_;
  std::function<void(const std::string&)> log_;
  k8s::LimitsDocument last_;
  std::string last_error_;
  uint64_t failures_ = 0;
};

}  // namespace rackwise::node_agent
