// SPDX-License-Identifier: GPL-2.0-or-later
// See steered_limits.h.
#include "steered_limits.h"

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "rackwise/gpu_mask.h"
#include "rackwise/power_bounds.h"

namespace rackwise::slurm {
namespace {

constexpr char kHeader[] =
    "# rackwise steered GPU limits: job_id watts_per_gpu declared_watts_per_gpu generation node:gpu,gpu ...\n";

// Watts with the milliwatts steering rounds to.
std::string Watts(Milliwatts mw) { return absl::StrFormat("%.3f", static_cast<double>(mw) / 1000.0); }

// One line's fields, each error naming the file, the line and the field.
class LineReader {
 public:
  LineReader(const std::string& file, int line) : where_(absl::StrCat(file, ":", line, ": field ")) {}

  absl::Status Error(absl::string_view field, absl::string_view value, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, field, ": '", value, "' ", what));
  }
  absl::StatusOr<Milliwatts> Watts(absl::string_view field, absl::string_view value) const {
    double watts = 0;
    if (!absl::SimpleAtod(value, &watts) || !std::isfinite(watts) || watts <= 0 || watts > 1e6)
      return Error(field, value, "is not a power in watts (a number above 0)");
    return static_cast<Milliwatts>(std::llround(watts * 1000));
  }
  absl::Status NodeGpus(absl::string_view value, SteeredLimit* out) const {
    std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(value, absl::MaxSplits(':', 1));
    if (parts.first.empty() || parts.second.empty())
      return Error("gpus", value, "is not node:gpu,gpu (a node name, a colon, GPU indices)");
    std::vector<int> gpus;
    for (absl::string_view item : absl::StrSplit(parts.second, ',')) {
      int gpu = -1;
      if (!absl::SimpleAtoi(item, &gpu) || gpu < 0 || gpu >= kMaxGpusPerNode)
        return Error("gpus", value, absl::StrCat("has '", item, "', not a GPU index (0 to ", kMaxGpusPerNode - 1, ")"));
      gpus.push_back(gpu);
    }
    for (const auto& [node, unused] : out->gpus)
      if (node == parts.first) return Error("gpus", value, "names a node twice");
    out->gpus.emplace_back(std::string(parts.first), std::move(gpus));
    return absl::OkStatus();
  }

 private:
  std::string where_;
};

absl::StatusOr<SteeredLimit> ParseLine(absl::string_view line, const LineReader& reader) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  SteeredLimit out;
  if (fields.size() < 5)
    return reader.Error("gpus", line, "has fewer than 5 fields (job_id watts declared generation node:gpus)");
  if (!absl::SimpleAtoi(fields[0], &out.job_id) || out.job_id == 0)
    return reader.Error("job_id", fields[0], "is not a Slurm job id");
  absl::StatusOr<Milliwatts> limit = reader.Watts("watts_per_gpu", fields[1]);
  if (!limit.ok()) return limit.status();
  absl::StatusOr<Milliwatts> declared = reader.Watts("declared_watts_per_gpu", fields[2]);
  if (!declared.ok()) return declared.status();
  out.limit_mw = *limit;
  out.declared_mw = *declared;
  if (out.limit_mw > out.declared_mw)
    return reader.Error("watts_per_gpu", fields[1], absl::StrCat("is above the declared ", fields[2], " W"));
  if (!absl::SimpleAtoi(fields[3], &out.generation))
    return reader.Error("generation", fields[3], "is not a whole number");
  for (size_t i = 4; i < fields.size(); ++i)
    if (absl::Status s = reader.NodeGpus(fields[i], &out); !s.ok()) return s;
  return out;
}

}  // namespace

std::string SteeredLimitsToText(const std::vector<SteeredLimit>& limits) {
  std::string out = kHeader;
  for (const SteeredLimit& l : limits) {
    absl::StrAppend(&out, l.job_id, " ", Watts(l.limit_mw), " ", Watts(l.declared_mw), " ", l.generation);
    for (const auto& [node, gpus] : l.gpus) absl::StrAppend(&out, " ", node, ":", absl::StrJoin(gpus, ","));
    out += "\n";
  }
  return out;
}

absl::StatusOr<std::vector<SteeredLimit>> ParseSteeredLimits(absl::string_view text, const std::string& file) {
  std::vector<SteeredLimit> out;
  absl::flat_hash_set<uint32_t> seen;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const LineReader reader(file, number);
    absl::StatusOr<SteeredLimit> parsed = ParseLine(line, reader);
    if (!parsed.ok()) return parsed.status();
    if (!seen.insert(parsed->job_id).second)
      return reader.Error("job_id", absl::StrCat(parsed->job_id), "is listed twice");
    out.push_back(*std::move(parsed));
  }
  return out;
}

std::vector<SteeredLimit> SteeredLimitsBook::Lines(const Ledger& ledger, const std::vector<LimitChange>& lowered) {
  std::vector<SteeredLimit> out;
  absl::flat_hash_map<std::string, std::pair<Milliwatts, uint64_t>> now;
  const Topology& topology = ledger.topology();
  for (const LimitChange& change : lowered) {
    SteeredLimit line;
    const Allocation* a = ledger.Find(change.allocation);
    if (a == nullptr || !absl::SimpleAtoi(change.allocation, &line.job_id) || line.job_id == 0) continue;
    auto last = last_.find(change.allocation);
    line.generation =
        last != last_.end() && last->second.first == change.to_per_gpu ? last->second.second : next_generation_++;
    line.limit_mw = change.to_per_gpu;
    line.declared_mw = change.from_per_gpu;
    for (const NodeGpus& n : a->nodes) line.gpus.emplace_back(topology.nodes()[n.node].name, GpuIndices(n.gpus));
    now[change.allocation] = {line.limit_mw, line.generation};
    out.push_back(std::move(line));
  }
  last_ = std::move(now);
  return out;
}

}  // namespace rackwise::slurm
