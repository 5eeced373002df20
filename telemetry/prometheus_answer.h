// Parsing a Prometheus HTTP API answer to an instant query (`/api/v1/query`) into power readings. Every way an
// answer can be malformed is an InvalidArgument naming what is wrong (not JSON, status not success, not a
// vector, a result without the label, a value that is not [timestamp, "number"]), so that a face can say why
// its telemetry went stale.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/telemetry.h"

namespace rackwise::telemetry {

// The answer's vector results as readings: name = the value of `label`, watts = the sample, age_s = now_unix_s
// minus the sample's timestamp. Expects resultType "vector" (a scalar has no label to name a node by).
absl::StatusOr<std::vector<PowerReading>> ParseQueryAnswer(std::string_view body, std::string_view label,
                                                           double now_unix_s);

}  // namespace rackwise::telemetry
