// libFuzzer target for the description and state parsers (and the hostlist code under them).
// Beyond "no crash, no leak, no undefined behaviour, no hang" it checks properties on every input:
//   - a rejected input always comes with at least one diagnostic, with a sane line;
//   - an accepted description passes ValidateClusterDescription, and writing it back as YAML and parsing that
//     gives an equal message;
//   - when the input is a hostlist, expanding the compressed form of its names gives the same set of names.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "google/protobuf/util/message_differencer.h"
#include "rackwise/cluster_description.h"
#include "rackwise/hostlist.h"

namespace {

using namespace rackwise;

// A small cluster that state inputs are checked against (the demo's shape, in a few lines).
constexpr char kStateCluster[] = R"(cluster: fuzz
node_types:
  - {name: hgx, gpus: 8, nvlink: node, node_watts: 10200, idle_watts: 2500}
  - {name: tray, gpus: 4, nvlink: rack, node_watts: 6600, idle_watts: 1500}
power_domains:
  - {name: row-a, power_cap_kw: 200}
racks:
  - {name: r01, type: hgx, nodes: "gpu[001-004]", power_cap_kw: 41, power_domain: row-a}
  - {name: nvl01, type: tray, nodes: "nvl01-t[01-18]", power_cap_kw: 132}
)";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "description_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckDiagnostics(const absl::Status& status, const Diagnostics& diagnostics) {
  if (status.ok()) return;
  if (diagnostics.empty()) Fail("rejected without a diagnostic", std::string(status.message()));
  for (const Diagnostic& d : diagnostics) {
    if (d.line < 0 || d.message.empty()) Fail("bad diagnostic", d.ToString());
  }
}

const v1::ClusterDescription& StateCluster() {
  static const v1::ClusterDescription* cluster = [] {
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(kStateCluster, "state-cluster", &diagnostics);
    if (!d.ok()) Fail("the built-in cluster does not parse", std::string(d.status().message()));
    return new v1::ClusterDescription(*d);
  }();
  return *cluster;
}

void FuzzDescription(std::string_view text) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(text, "fuzz.yaml", &diagnostics);
  CheckDiagnostics(d.status(), diagnostics);
  if (!d.ok()) return;
  Diagnostics again_diagnostics;
  if (!ValidateClusterDescription(*d, "memory", &again_diagnostics)) {
    Fail("accepted from YAML but not in memory", again_diagnostics[0].ToString());
  }
  std::string yaml = ClusterDescriptionToYaml(*d);
  absl::StatusOr<v1::ClusterDescription> again = ParseClusterDescription(yaml, "written.yaml", &again_diagnostics);
  if (!again.ok()) Fail("written YAML does not parse", yaml + "\n" + std::string(again.status().message()));
  if (!google::protobuf::util::MessageDifferencer::Equals(*d, *again)) Fail("round trip changed the message", yaml);
}

void FuzzState(std::string_view text) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterState> state = ParseClusterState(text, "fuzz-state.yaml", StateCluster(), &diagnostics);
  CheckDiagnostics(state.status(), diagnostics);
}

void FuzzHostlist(std::string_view text) {
  if (text.size() > 256) return;
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(text, 20000);
  if (!names.ok()) return;
  std::string compressed = CompressHostlist(*names);
  absl::StatusOr<std::vector<std::string>> again = ExpandHostlist(compressed, 20000);
  if (!again.ok()) Fail("compressed hostlist does not expand", compressed);
  if (std::set<std::string>(names->begin(), names->end()) != std::set<std::string>(again->begin(), again->end())) {
    Fail("expand(compress(x)) differs from x", std::string(text) + " -> " + compressed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzDescription(text);
  FuzzState(text);
  FuzzHostlist(text);
  return 0;
}
