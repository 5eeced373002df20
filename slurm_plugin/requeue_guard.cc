// SPDX-License-Identifier: GPL-2.0-or-later
// RecentDepartures and the prolog-skip window; see requeue_guard.h.
#include "requeue_guard.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace rackwise::slurm {
namespace {

constexpr int64_t kDefaultCredExpire = 120;  // Slurm's DEFAULT_EXPIRATION_WINDOW
constexpr int64_t kMinCredExpire = 5;        // below this Slurm logs an error and keeps the default
constexpr int64_t kMaxCredExpire = 7 * 24 * 3600;

int64_t CredExpire(std::string_view authinfo) {
  constexpr std::string_view kKey = "cred_expire=";
  const size_t at = authinfo.find(kKey);
  if (at == std::string_view::npos) return kDefaultCredExpire;
  const std::string_view digits = authinfo.substr(at + kKey.size());
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end == digits.data() || value < kMinCredExpire) return kDefaultCredExpire;
  return std::min(value, kMaxCredExpire);
}

}  // namespace

int64_t PrologSkipWindowSeconds(std::string_view authinfo, int64_t kill_wait_s) {
  return CredExpire(authinfo) + std::clamp<int64_t>(kill_wait_s, 5, 65533) + 1;
}

void RecentDepartures::Left(uint32_t job_id, std::vector<NodeId> nodes, int64_t now_s) {
  if (nodes.empty()) return;
  if (!by_job_.contains(job_id) && by_job_.size() >= max_jobs_) DropOldest();
  by_job_[job_id] = Departure{std::move(nodes), now_s};
}

std::vector<NodeId> RecentDepartures::Avoid(uint32_t job_id, int64_t now_s, int64_t window_s, int64_t* wait_s) const {
  if (wait_s) *wait_s = 0;
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return {};
  const int64_t usable_at = it->second.left_at + window_s;
  if (now_s >= usable_at) return {};
  if (wait_s) *wait_s = usable_at - now_s;
  return it->second.nodes;
}

void RecentDepartures::Prune(int64_t now_s, int64_t window_s) {
  absl::erase_if(by_job_, [&](const auto& entry) { return now_s >= entry.second.left_at + window_s; });
}

void RecentDepartures::DropOldest() {
  // Drops the oldest tenth in one pass, so that a full map costs one scan per max_jobs/10 departures.
  std::vector<int64_t> times;
  times.reserve(by_job_.size());
  for (const auto& [job, departure] : by_job_) times.push_back(departure.left_at);
  const size_t drop = std::max<size_t>(1, times.size() / 10);
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(drop - 1), times.end());
  const int64_t cutoff = times[drop - 1];
  absl::erase_if(by_job_, [&](const auto& entry) { return entry.second.left_at <= cutoff; });
}

}  // namespace rackwise::slurm
