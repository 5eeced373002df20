// See leader_election.h.
#include "leader_election.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rackwise::ledger {

std::string LeaderValue(const LeaderInfo& leader) { return absl::StrCat(leader.replica_id, " ", leader.address); }

LeaderInfo ParseLeaderValue(const std::string& value) {
  const size_t space = value.find(' ');
  if (space == std::string::npos || space == 0) return {};
  return {value.substr(0, space), value.substr(space + 1)};
}

LeaderElection::LeaderElection(EtcdClient* client, Options options, Callbacks callbacks)
    : client_(client), options_(std::move(options)), callbacks_(std::move(callbacks)) {}

LeaderElection::~LeaderElection() { Stop(); }

void LeaderElection::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaderElection::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

LeaderInfo LeaderElection::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

void LeaderElection::Log(const std::string& line) const {
  if (callbacks_.log) callbacks_.log(line);
}

bool LeaderElection::WaitFor(std::chrono::milliseconds interval) {
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait_for(lock, interval, [this] { return stopping_; });
  return !stopping_;
}

absl::StatusOr<bool> LeaderElection::Campaign(int64_t* lease, int64_t* revision, Clock::time_point* deadline) {
  absl::StatusOr<std::vector<EtcdKeyValue>> held = client_->Get(options_.key);
  if (!held.ok()) return held.status();  // etcd unreachable: Run logs the change of state
  if (!held->empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = ParseLeaderValue(held->front().value);
    return false;
  }
  const Clock::time_point granted_at = Clock::now();
  absl::StatusOr<int64_t> granted = client_->LeaseGrant(options_.lease_ttl_s);
  if (!granted.ok()) {
    Log(absl::StrCat("campaign: ", granted.status().message()));
    return false;
  }
  const EtcdCompare vacant{.key = options_.key, .create_revision = 0};
  const EtcdWrite claim{.key = options_.key, .value = LeaderValue(options_.self), .lease = *granted};
  absl::StatusOr<EtcdTxnResult> won = client_->Txn({&vacant, 1}, {&claim, 1});
  if (!won.ok() || !won->succeeded) {
    if (!won.ok()) Log(absl::StrCat("campaign: ", won.status().message()));
    (void)client_->LeaseRevoke(*granted);  // another replica was faster; do not leave the lease to expire
    return false;
  }
  *lease = *granted;
  *revision = won->revision;
  *deadline = granted_at + std::chrono::seconds(options_.lease_ttl_s);
  return true;
}

void LeaderElection::Lead(int64_t lease, int64_t revision, Clock::time_point deadline) {
  const auto renew_every = std::chrono::milliseconds(options_.lease_ttl_s * 1000 / 3);
  Clock::time_point next_renewal = Clock::now() + renew_every;
  while (true) {
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::min(next_renewal, deadline) - Clock::now());
    if (!WaitFor(std::max(wait, std::chrono::milliseconds(0)))) return;  // stopping: Run revokes
    if (Clock::now() >= deadline) {
      Log("lease not renewed within its TTL: stepping down");
      break;
    }
    const Clock::time_point sent = Clock::now();
    absl::StatusOr<int64_t> ttl = client_->LeaseKeepAlive(lease);
    if (ttl.ok() && *ttl > 0) {
      // The lease lives, but the key may not be ours any more (deleted by hand, or re-created by another
      // replica after that): then the fence refuses every write and another replica may lead, so step down.
      if (!HoldsKey(revision)) {
        Log("the leader key is no longer the one this replica created: stepping down");
        break;
      }
      deadline = sent + std::chrono::seconds(*ttl);
      next_renewal = sent + renew_every;
      if (callbacks_.renewed) callbacks_.renewed(deadline);
      continue;
    }
    if (ttl.ok()) {
      Log("etcd says the lease is gone: stepping down");
      break;
    }
    // etcd did not answer: try again soon, until the deadline.
    Log(absl::StrCat("lease renewal failed: ", ttl.status().message()));
    next_renewal = Clock::now() + std::chrono::milliseconds(options_.poll_ms);
  }
  leading_.store(false);
  lease_.store(0);
  if (callbacks_.lost) callbacks_.lost();
  (void)client_->LeaseRevoke(lease);  // best effort: it may be gone already
}

bool LeaderElection::HoldsKey(int64_t revision) {
  absl::StatusOr<std::vector<EtcdKeyValue>> held = client_->Get(options_.key);
  if (!held.ok()) return true;  // unknown: the lease deadline decides
  return !held->empty() && held->front().create_revision == revision;
}

void LeaderElection::Run() {
  std::string last_error;
  while (true) {
    int64_t lease = 0, revision = 0;
    Clock::time_point deadline;
    absl::StatusOr<bool> won = Campaign(&lease, &revision, &deadline);
    if (won.ok() && *won) {
      lease_.store(lease);
      if (absl::Status s = callbacks_.elected(revision, deadline); !s.ok()) {
        Log(absl::StrCat("won the election but cannot serve: ", s.message(), "; giving the leadership up"));
        (void)client_->LeaseRevoke(lease);
        lease_.store(0);
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          leader_ = options_.self;
        }
        leading_.store(true);
        Log(absl::StrCat("leader (", options_.key, " created at revision ", revision, ")"));
        Lead(lease, revision, deadline);
      }
    } else if (!won.ok()) {
      if (won.status().ToString() != last_error) Log(absl::StrCat("etcd: ", won.status().message()));
      last_error = won.status().ToString();
    } else {
      last_error.clear();
    }
    if (!WaitFor(std::chrono::milliseconds(options_.poll_ms))) break;
  }
  if (leading_.exchange(false)) {
    if (callbacks_.lost) callbacks_.lost();
    if (absl::Status s = client_->LeaseRevoke(lease_.load()); !s.ok())
      Log(absl::StrCat("revoking the lease on stop: ", s.message()));
    else
      Log("stopped leading: lease revoked");
  }
}

}  // namespace rackwise::ledger
