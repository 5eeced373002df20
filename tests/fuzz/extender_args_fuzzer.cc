// libFuzzer target for the extender's request decoding (the ExtenderArgs scanner, the candidate-list cache)
// and its answer encoding. Beyond "no crash, no leak, no undefined behaviour, no hang" it checks on every input:
//   - decoding with the cache (first sight and repeat) agrees with decoding without it: same verdict, same names,
//     same node ids, byte-identical answers; so a cached list can never answer differently from a fresh scan;
//   - every answer built from an accepted request is valid JSON, whatever bytes the names held, and its
//     NodeNames decode to the request's names (for names that are valid UTF-8).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "candidate_nodes.h"
#include "extender_wire.h"
#include "rackwise/cluster_description.h"

namespace {

using namespace rackwise;
using namespace rackwise::k8s;

constexpr char kCluster[] = R"(cluster: fuzz
node_types:
  - {name: hgx, gpus: 8, nvlink: node, node_watts: 10200, idle_watts: 2500}
racks:
  - {name: r01, type: hgx, nodes: "gpu[001-004]", power_cap_kw: 41}
  - {name: r02, type: hgx, nodes: "n[1-4]", power_cap_kw: 41}
)";

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "extender_args_fuzzer: %s\ninput: %.*s\n", what, static_cast<int>(input.size()), input.data());
  std::abort();
}

const Topology& FuzzTopology() {
  static const Topology* topology = [] {
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d = ParseClusterDescription(kCluster, "fuzz-cluster", &diagnostics);
    if (!d.ok()) Fail("the fuzz cluster does not parse", kCluster);
    absl::StatusOr<Topology> t = Topology::Build(*d);
    if (!t.ok()) Fail("the fuzz cluster does not build", kCluster);
    return new Topology(std::move(*t));
  }();
  return *topology;
}

// nlohmann's dump throws on invalid UTF-8 (its strict default), which is the test we want.
bool ValidUtf8(std::string_view s) {
  try {
    Json(std::string(s)).dump();
    return true;
  } catch (...) {
    return false;
  }
}

// Answers of every shape for these args: all candidates feasible, all failed, all unresolvable, and scores.
std::string Answers(const ExtenderArgs& args) {
  const CandidateNodes& c = args.candidate_nodes();
  FilterResult feasible, failed;
  const uint32_t why = failed.AddReason("rackwise: fuzz \"reason\"\n\xff");
  for (uint32_t i = 0; i < c.size(); ++i) {
    (i % 2 ? feasible.feasible.push_back(i) : feasible.failed.push_back({i, feasible.AddReason("r")}));
    failed.unresolvable.push_back({i, why});
  }
  std::vector<int> scores(c.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<int>(i % 11);
  return EncodeFilterResult(feasible, args) + "\n" + EncodeFilterResult(failed, args) + "\n" +
         EncodeHostPriorityList(c, scores);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);  // Debian absl: its own string_view
  static CandidateNodeCache cache(&FuzzTopology(), /*max_entries=*/4, /*max_bytes=*/1 << 20, /*min_names=*/1);
  absl::StatusOr<ExtenderArgs> fresh = ParseExtenderArgs(body);
  absl::StatusOr<ExtenderArgs> first = ParseExtenderArgs(body, &cache);
  absl::StatusOr<ExtenderArgs> again = ParseExtenderArgs(body, &cache);
  if (fresh.ok() != first.ok() || fresh.ok() != again.ok()) Fail("the cache changed the verdict", body);
  if (!fresh.ok()) {
    if (fresh.status().message().empty()) Fail("refused without a message", body);
    return 0;
  }
  const CandidateNodes& c = fresh->candidate_nodes();
  for (const absl::StatusOr<ExtenderArgs>* cached : {&first, &again}) {
    const CandidateNodes& k = (*cached)->candidate_nodes();
    if (k.names() != c.names()) Fail("the cache changed the names", body);
    std::vector<NodeId> ids;
    c.ResolveInto(FuzzTopology(), &ids);
    if (k.resolved() && k.ids() != ids) Fail("the cache changed the node ids", body);
    if (Answers(**cached) != Answers(*fresh)) Fail("the cache changed an answer", body);
  }
  const std::string answers = Answers(*fresh);
  size_t start = 0;
  for (int part = 0; part < 3; ++part) {
    size_t end = answers.find('\n', start);
    std::string_view one = std::string_view(answers).substr(start, end == std::string::npos ? end : end - start);
    Json parsed = Json::parse(one, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) Fail("an answer is not valid JSON", body);
    if (part == 0 && fresh->has_node_names) {
      const Json& names = parsed["NodeNames"];
      size_t k = 0;
      for (size_t i = 1; i < c.size(); i += 2, ++k) {
        if (ValidUtf8(c.name(i)) && (k >= names.size() || names[k] != c.name(i)))
          Fail("a name did not round-trip", body);
      }
    }
    start = end + 1;
  }
  return 0;
}
