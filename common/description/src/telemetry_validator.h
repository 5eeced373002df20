// The rules of a description's `telemetry:` section (URL, queries, labels, intervals, reclaim_pct 0..50,
// on_overdraw), reported like every other rule: at the line of the field to edit.
#pragma once

#include <string_view>

#include "field_path_lines.h"
#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

// Appends a diagnostic for every telemetry rule `description` breaks (nothing when it has no telemetry).
void CheckTelemetry(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                    Diagnostics* diagnostics);

}  // namespace rackwise
