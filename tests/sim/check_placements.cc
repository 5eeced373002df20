// check_placements: the independent checker as a command, for the CLI round-trip test and for users.
//   check_placements CLUSTER.yaml TRACE.csv PLACEMENTS.jsonl [--expect-no-violations] [--spread-slowdown F]
// Prints the violations it measured; exits 1 on any inconsistency (or any violation when asked for none).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "placement_checker.h"
#include "rackwise/cluster_description.h"

int main(int argc, char** argv) {
  constexpr const char* kUsage =
      "usage: check_placements CLUSTER.yaml TRACE.csv PLACEMENTS.jsonl [--expect-no-violations] "
      "[--spread-slowdown F]\n";
  if (argc < 4) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  bool expect_none = false;
  double slowdown = 0;
  for (int i = 4; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--expect-no-violations")) {
      expect_none = true;
    } else if (!std::strcmp(argv[i], "--spread-slowdown") && i + 1 < argc) {
      char* end = nullptr;
      slowdown = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(slowdown >= 0)) {
        std::fprintf(stderr, "--spread-slowdown: '%s' is not a number >= 0\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "%s", kUsage);
      return 2;
    }
  }
  rackwise::Diagnostics diags;
  auto d = rackwise::LoadClusterDescription(argv[1], &diags);
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", std::string(d.status().message()).c_str());
    return 1;
  }
  auto jobs = rackwise::LoadTrace(argv[2], &diags);
  if (!jobs.ok()) {
    std::fprintf(stderr, "%s\n", std::string(jobs.status().message()).c_str());
    return 1;
  }
  std::ifstream in(argv[3], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", argv[3]);
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  rackwise::check::CheckReport rep = rackwise::check::CheckPlacements(*d, *jobs, text.str(), slowdown);
  for (const std::string& e : rep.errors) std::fprintf(stderr, "%s: %s\n", argv[3], e.c_str());
  std::printf(
      "%s: %d placements, %zu problems, over cap: racks %.0f kW*s, power domains %.0f kW*s, %d excursions, "
      "peak rack %.1f kW; wanting locality in their fewest NVLink domains by size: %d of %d\n",
      argv[3], rep.placements, rep.errors.size(), rep.rack_violation_kws, rep.domain_violation_kws, rep.excursions,
      rep.peak_rack_kw, rep.wanting_locality_at_fewest, rep.wanting_locality);
  if (!rep.errors.empty()) return 1;
  if (expect_none && (rep.rack_violation_kws + rep.domain_violation_kws > 0 || rep.excursions > 0)) return 1;
  return 0;
}
