// Prometheus metrics of the extender: decisions by verb and outcome, a latency histogram per verb. The
// cluster-state gauges (rack draw and cap, free GPUs per NVLink domain, reservations) are rendered from the
// service's state at scrape time (ExtenderService::RenderStateMetrics), so they can never go stale.
// Thread-safe: counters are atomics; the outcome map takes a small mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <utility>
#include "absl/strings/string_view.h"

namespace rackwise::k8s {

// The extender's version (the project's, from CMake): --version and rackwise_build_info.
const char* ExtenderVersion();

enum class Verb { kFilter, kPrioritize, kBind, kPreempt, kGrpcPlace, kGrpcOther, kCount };
const char* VerbName(Verb verb);

// Latency histogram with fixed buckets from 50 us to 10 s.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 16> kBounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                     0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};
  void Observe(double seconds);
  // Appends the _bucket/_sum/_count lines for one label set, e.g. labels = "verb=\"filter\"".
  void Render(absl::string_view name, absl::string_view labels, std::string* out) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size()> buckets_{};  // non-cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

class ExtenderMetrics {
 public:
  void ObserveLatency(Verb verb, double seconds) { latency_[static_cast<int>(verb)].Observe(seconds); }
  void CountDecision(Verb verb, absl::string_view outcome);
  void CountHttpError(int status);
  uint64_t decisions(Verb verb, absl::string_view outcome) const;
  uint64_t http_errors(int status) const;

  // The process-level families (decisions, latencies, HTTP errors) in the text exposition format 0.0.4.
  std::string Render() const;

 private:
  std::array<LatencyHistogram, static_cast<int>(Verb::kCount)> latency_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> decisions_;
  std::map<int, uint64_t> http_errors_;
};

}  // namespace rackwise::k8s
