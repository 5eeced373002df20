// Leader election on etcd with a lease: a replica campaigns with one transaction, "if the leader key does not
// exist, put it = <replica id> <address> with my lease", and while it leads renews the lease every third of its
// TTL. A replica that cannot renew, whose lease etcd reports gone, or whose key is no longer the one it created
// steps down at once (on_lost), and so does one whose last renewal is a whole TTL old. Followers read the key every
// poll interval and campaign as soon as it is gone (its holder revoked its lease on a clean stop, or the lease expired
// after a crash).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcd_client.h"

namespace rackwise::ledger {

// Who leads, as the leader key's value says: "<replica id> <address>".
struct LeaderInfo {
  std::string replica_id;
  std::string address;
};
std::string LeaderValue(const LeaderInfo& leader);
LeaderInfo ParseLeaderValue(const std::string& value);  // an empty or malformed value: replica_id ""

class LeaderElection {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string key;      // the leader key
    LeaderInfo self;      // written as the key's value
    int lease_ttl_s = 3;  // etcd grants no less than about 2 s with its default timing
    int poll_ms = 100;    // how often a follower looks for a vacant key
  };
  struct Callbacks {
    // Won: the leader key's create_revision (the store's fence) and until when the lease is live. An error
    // (the state could not be loaded) gives the leadership up again.
    std::function<absl::Status(int64_t create_revision, Clock::time_point lease_deadline)> elected;
    std::function<void(Clock::time_point lease_deadline)> renewed;
    std::function<void()> lost;
    std::function<void(const std::string&)> log;
  };

  // `client` must outlive this and be used by nothing else (renewals must not wait behind other calls).
  LeaderElection(EtcdClient* client, Options options, Callbacks callbacks);
  ~LeaderElection();

  void Start();
  // Stops campaigning; a leader revokes its lease so that another replica takes over at once.
  void Stop();

  bool leading() const { return leading_.load(); }
  // The leader as last read from etcd (this replica's own info while it leads).
  LeaderInfo leader() const;

 private:
  void Run();
  // One attempt: true when this replica now holds the key (create_revision in *revision, lease in *lease);
  // an error when etcd cannot be read.
  absl::StatusOr<bool> Campaign(int64_t* lease, int64_t* revision, Clock::time_point* deadline);
  // Renews until the lease is lost, the key is no longer the one created at `revision`, or Stop; returns with
  // leading_ false (unless stopping).
  void Lead(int64_t lease, int64_t revision, Clock::time_point deadline);
  // Whether the leader key is still the one this replica created (true when etcd does not answer).
  bool HoldsKey(int64_t revision);
  bool WaitFor(std::chrono::milliseconds interval);  // false when stopping
  void Log(const std::string& line) const;

  EtcdClient* client_;
  Options options_;
  Callbacks callbacks_;
  std::atomic<bool> leading_{false};
  std::atomic<int64_t> lease_{0};
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  LeaderInfo leader_;
  std::thread thread_;
};

}  // namespace rackwise::ledger
