// The extender's operator state on disk: the caps, node health and allocations set over the gRPC service, in
// the state file format (proto/rackwise/v1/state.proto, as `rackwise place --state` reads it), so that they are
// back after a restart or a crash.
//
// Where: `--state-file PATH`, by default beside the description (rackwise.yaml -> rackwise.state.yaml). Saving
// writes a temporary file in the same directory, fsyncs it, renames it over the old one and fsyncs the
// directory: after a crash (kill -9, power loss) the file holds either the old state or the new one, whole.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::k8s {
class ExtenderService;
}

namespace rackwise::k8s {

// The default path: the description's, with its extension replaced by ".state.yaml".
std::string DefaultStateFile(const std::string& description_path);

// Reads and checks the state against `description` (unknown names, bad indices, out-of-range watts and caps are
// InvalidArgument with file and line). nullopt when no file exists yet (the first start).
absl::StatusOr<std::optional<v1::ClusterState>> LoadStateFile(const std::string& path,
                                                              const v1::ClusterDescription& description);

// Replaces the file with `state` atomically and durably (see above). Unavailable when it cannot.
absl::Status SaveStateFile(const std::string& path, const v1::ClusterState& state);

// Puts back what `path` holds into `service` (nothing on the first start) and makes the service save every
// operator change there. Call before the servers start and before the service is marked synced, so that
// /readyz says not ready until the saved state is back. Returns what was restored.
absl::StatusOr<v1::ClusterState> AttachStateFile(const std::string& path, const v1::ClusterDescription& description,
                                                 ExtenderService* service);

}  // namespace rackwise::k8s
