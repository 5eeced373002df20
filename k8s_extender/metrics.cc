// Prometheus text rendering for the extender's counters and histograms.
#include "metrics.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

const char* ExtenderVersion() { return RACKWISE_VERSION; }

const char* VerbName(Verb verb) {
  switch (verb) {
    case Verb::kFilter: return "filter";
    case Verb::kPrioritize: return "prioritize";
    case Verb::kBind: return "bind";
    case Verb::kPreempt: return "preempt";
    case Verb::kGrpcPlace: return "grpc_place";
    case Verb::kGrpcOther: return "grpc_other";
    case Verb::kCount: break;
  }
  return "unknown";
}

void LatencyHistogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  if (i < kBounds.size()) buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void LatencyHistogram::Render(absl::string_view name, absl::string_view labels, std::string* out) const {
  uint64_t cumulative = 0;
  char le[32];
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    std::snprintf(le, sizeof le, "%g", kBounds[i]);
    absl::StrAppend(out, name, "_bucket{", labels, ",le=\"", le, "\"} ", cumulative, "\n");
  }
  uint64_t count = count_.load(std::memory_order_relaxed);
  absl::StrAppend(out, name, "_bucket{", labels, ",le=\"+Inf\"} ", count, "\n");
  char sum[64];
  std::snprintf(sum, sizeof sum, "%.9f", static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9);
  absl::StrAppend(out, name, "_sum{", labels, "} ", sum, "\n");
  absl::StrAppend(out, name, "_count{", labels, "} ", count, "\n");
}

void ExtenderMetrics::CountDecision(Verb verb, absl::string_view outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++decisions_[{VerbName(verb), std::string(outcome)}];
}

void ExtenderMetrics::CountHttpError(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_errors_[status];
}

uint64_t ExtenderMetrics::decisions(Verb verb, absl::string_view outcome) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = decisions_.find({VerbName(verb), std::string(outcome)});
  return it == decisions_.end() ? 0 : it->second;
}

uint64_t ExtenderMetrics::http_errors(int status) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = http_errors_.find(status);
  return it == http_errors_.end() ? 0 : it->second;
}

std::string ExtenderMetrics::Render() const {
  std::string out;
  out.append("# HELP rackwise_build_info The running rackwise-extender's version (always 1).\n");
  out.append("# TYPE rackwise_build_info gauge\n");
  absl::StrAppend(&out, "rackwise_build_info{version=\"", ExtenderVersion(), "\"} 1\n");
  out.append("# HELP rackwise_decisions_total Extender and gRPC decisions by verb and outcome.\n");
  out.append("# TYPE rackwise_decisions_total counter\n");
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, n] : decisions_) {
      absl::StrAppend(&out, "rackwise_decisions_total{verb=\"", key.first, "\",outcome=\"", key.second, "\"} ", n,
                      "\n");
    }
    out.append("# HELP rackwise_http_errors_total Requests answered with an HTTP error, by status.\n");
    out.append("# TYPE rackwise_http_errors_total counter\n");
    for (const auto& [status, n] : http_errors_) {
      absl::StrAppend(&out, "rackwise_http_errors_total{code=\"", status, "\"} ", n, "\n");
    }
  }
  out.append("# HELP rackwise_request_duration_seconds Time to answer a verb, from body received to answer built.\n");
  out.append("# TYPE rackwise_request_duration_seconds histogram\n");
  for (int v = 0; v < static_cast<int>(Verb::kCount); ++v) {
    latency_[v].Render("rackwise_request_duration_seconds",
                       absl::StrCat("verb=\"", VerbName(static_cast<Verb>(v)), "\""), &out);
  }
  return out;
}

}  // namespace rackwise::k8s
