// Keeps the extender's ledger in step with the API server, as client-go's reflector does: LIST (paginated)
// then WATCH from the list's resourceVersion; on a watch that ends normally, watch again from the last version
// seen (bookmarks included); on 410 Gone, relist; on any other error, back off exponentially (with a cap)
// and retry. Pods: bound, non-terminal pods (fieldSelector), applied to ExtenderService; nodes: Ready and
// spec.unschedulable; and the objects that say what GPUs and groups pods have (ResourceClaims and their
// templates, ResourceSlices, DeviceClasses, ComputeDomains, the Workload API's pod groups). An API the server
// does not serve (404: DRA off, no NVIDIA driver, no Workload API) counts as empty and is asked again later.
// The service is marked synced once every first list is applied, and not before.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "extender_service.h"
#include "kube_client.h"

namespace rackwise::k8s {

struct SyncOptions {
  int page_size = 500;
  int watch_timeout_s = 300;
  int64_t backoff_initial_ms = 500;
  int64_t backoff_max_ms = 30'000;
  std::function<int64_t()> now_ms;              // monotonic ms for the service; default steady clock
  std::function<void(const std::string&)> log;  // one line per event worth telling an operator
  bool dra = true;                              // list and watch the DRA, ComputeDomain and Workload API objects
  std::string pod_group_version = "v1alpha2";   // scheduling.k8s.io version of PodGroup objects
  int64_t not_served_retry_ms = 300'000;        // how long before asking again for an API the server lacks
};

struct SyncStats {
  std::atomic<int64_t> lists{0}, relists_after_gone{0}, watch_events{0}, errors{0};
};

class KubeSync {
 public:
  KubeSync(KubeClient* client, ExtenderService* service, SyncOptions options);
  ~KubeSync();

  void Start();  // one thread for pods, one for nodes
  void Stop();   // aborts watches and joins
  const SyncStats& stats() const { return stats_; }

  // One reflector loop over a resource until Stop(). Public for tests.
  using ReplaceFn = std::function<void(const std::vector<Json>&)>;
  using EventFn = std::function<void(const WatchEvent&)>;
  // `optional`: a 404 on LIST (the API is not served) is an empty list, asked again after not_served_retry_ms.
  void Reflect(const std::string& path, const std::string& field_selector, const ReplaceFn& replace,
               const EventFn& event, std::atomic<bool>* listed, bool optional = false);

 private:
  bool SleepFor(int64_t ms);  // false when stopped
  void Log(const std::string& line) const;
  void MaybeMarkSynced();
  void StartDra();

  KubeClient* client_;
  ExtenderService* service_;
  SyncOptions options_;
  SyncStats stats_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> pods_listed_{false}, nodes_listed_{false};
  std::vector<std::unique_ptr<std::atomic<bool>>> dra_listed_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

// GPU Feature Discovery's NVLink clique label (<ClusterUUID>.<CliqueID>, one per NVL72 NVLink domain).
inline constexpr char kGpuCliqueLabel[] = "nvidia.com/gpu.clique";
// metadata.labels[key] of an object, "" when absent.
std::string NodeLabel(const Json& node, absl::string_view key);

// Node health from a core/v1 Node: Ready condition and spec.unschedulable.
void NodeStatusOf(const Json& node, std::string* name, bool* ready, bool* unschedulable);

}  // namespace rackwise::k8s
