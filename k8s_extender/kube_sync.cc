// List+watch reflectors for pods and nodes (see kube_sync.h).
#include "kube_sync.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

#include "http_server.h"

namespace rackwise::k8s {
namespace {

constexpr char kPodsPath[] = "/api/v1/pods";
constexpr char kNodesPath[] = "/api/v1/nodes";
// What kube-scheduler's own informer of assigned pods selects, plus nothing that holds no node.
constexpr char kBoundPods[] = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";

std::string ResourceVersionOf(const Json& object) {
  const Json* meta = FindField(object, "metadata");
  return meta ? StringField(*meta, "resourceVersion") : "";
}

}  // namespace

std::string NodeLabel(const Json& node, absl::string_view key) {
  const Json* labels = FindPath(node, {"metadata", "labels"});
  return labels != nullptr ? StringField(*labels, key) : "";
}

void NodeStatusOf(const Json& node, std::string* name, bool* ready, bool* unschedulable) {
  const Json* meta = FindField(node, "metadata");
  *name = meta ? StringField(*meta, "name") : "";
  *unschedulable = false;
  if (const Json* spec = FindField(node, "spec")) {
    if (const Json* u = FindField(*spec, "unschedulable"); u && u->is_boolean()) *unschedulable = u->get<bool>();
  }
  *ready = false;
  const Json* conditions = FindPath(node, {"status", "conditions"});
  if (conditions != nullptr && conditions->is_array()) {
    for (const Json& c : *conditions) {
      if (StringField(c, "type") == "Ready") *ready = StringField(c, "status") == "True";
    }
  }
}

KubeSync::KubeSync(KubeClient* client, ExtenderService* service, SyncOptions options)
    : client_(client), service_(service), options_(std::move(options)) {
  if (!options_.now_ms) options_.now_ms = SteadyNowMs;
}

KubeSync::~KubeSync() { Stop(); }

void KubeSync::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

bool KubeSync::SleepFor(int64_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
  return !stop_;
}

void KubeSync::MaybeMarkSynced() {
  for (const auto& listed : dra_listed_) {
    if (!*listed) return;
  }
  if (pods_listed_ && nodes_listed_ && !service_->synced()) {
    service_->SetSynced(true);
    Log("synced with the API server: ledger rebuilt, answering filter");
  }
}

void KubeSync::StartDra() {
  const std::pair<DraKind, std::string> kinds[] = {
      {DraKind::kDeviceClass, "/apis/resource.k8s.io/v1/deviceclasses"},
      {DraKind::kResourceSlice, "/apis/resource.k8s.io/v1/resourceslices"},
      {DraKind::kResourceClaimTemplate, "/apis/resource.k8s.io/v1/resourceclaimtemplates"},
      {DraKind::kResourceClaim, "/apis/resource.k8s.io/v1/resourceclaims"},
      {DraKind::kComputeDomain, "/apis/resource.nvidia.com/v1beta1/computedomains"},
      {DraKind::kPodGroup, absl::StrCat("/apis/scheduling.k8s.io/", options_.pod_group_version, "/podgroups")},
      {DraKind::kWorkload, "/apis/scheduling.k8s.io/v1alpha1/workloads"},
  };
  for (size_t i = 0; i < std::size(kinds); ++i) dra_listed_.push_back(std::make_unique<std::atomic<bool>>(false));
  for (size_t i = 0; i < std::size(kinds); ++i) {
    threads_.emplace_back([this, kind = kinds[i].first, path = kinds[i].second, listed = dra_listed_[i].get()] {
      Reflect(
          path, "",
          [this, kind](const std::vector<Json>& items) { service_->ReplaceDraObjects(kind, items, options_.now_ms()); },
          [this, kind, path](const WatchEvent& ev) {
            absl::Status s = service_->ApplyDraObject(kind, ev.object, ev.type == "DELETED", options_.now_ms());
            if (!s.ok()) Log(absl::StrCat("ignoring an object of ", path, ": ", s.message()));
          },
          listed, /*optional=*/true);
    });
  }
}

void KubeSync::Start() {
  if (options_.dra) StartDra();
  threads_.emplace_back([this] {
    Reflect(
        kPodsPath, kBoundPods,
        [this](const std::vector<Json>& items) {
          std::vector<PodInfo> pods;
          pods.reserve(items.size());
          for (const Json& item : items) {
            absl::StatusOr<PodInfo> p = ParsePod(item);
            if (p.ok()) {
              pods.push_back(std::move(*p));
            } else {
              Log(absl::StrCat("ignoring a pod in the list: ", p.status().message()));
            }
          }
          service_->ReplacePods(pods, options_.now_ms());
        },
        [this](const WatchEvent& ev) {
          absl::StatusOr<PodInfo> p = ParsePod(ev.object);
          if (!p.ok()) {
            Log(absl::StrCat("ignoring a pod event: ", p.status().message()));
            return;
          }
          if (ev.type == "DELETED") {
            service_->DeletePod(*p);
          } else {
            service_->ApplyPod(*p, options_.now_ms());
          }
        },
        &pods_listed_);
  });
  threads_.emplace_back([this] {
    Reflect(
        kNodesPath, "",
        [this](const std::vector<Json>& items) {
          for (const Json& item : items) {
            std::string name;
            bool ready = false, unschedulable = false;
            NodeStatusOf(item, &name, &ready, &unschedulable);
            service_->ApplyNode(name, ready, unschedulable);
            service_->SetNodeClique(name, NodeLabel(item, kGpuCliqueLabel));
          }
        },
        [this](const WatchEvent& ev) {
          std::string name;
          bool ready = false, unschedulable = false;
          NodeStatusOf(ev.object, &name, &ready, &unschedulable);
          // A deleted Node object: kubelet gone, nothing new goes there.
          service_->ApplyNode(name, ev.type != "DELETED" && ready, unschedulable);
          service_->SetNodeClique(name, NodeLabel(ev.object, kGpuCliqueLabel));
        },
        &nodes_listed_);
  });
}

void KubeSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (client_ != nullptr) client_->Stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void KubeSync::Reflect(const std::string& path, const std::string& field_selector, const ReplaceFn& replace,
                       const EventFn& event, std::atomic<bool>* listed, bool optional) {
  int64_t backoff = options_.backoff_initial_ms;
  std::string rv;
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      std::vector<Json> items;
      std::string cont, list_rv;
      absl::Status status = absl::OkStatus();
      do {
        absl::StatusOr<ListPage> page = client_->List(path, field_selector, options_.page_size, cont);
        if (!page.ok()) {
          status = page.status();
          break;
        }
        for (Json& item : page->items) items.push_back(std::move(item));
        if (list_rv.empty() || cont.empty()) list_rv = page->resource_version;
        cont = page->continue_token;
      } while (!cont.empty() && !stop_);
      if (stop_) return;
      if (!status.ok() && optional && absl::IsNotFound(status)) {
        // Not served here: nothing of it exists. Asked again later, in case the API is enabled meanwhile.
        if (!*listed) Log(absl::StrCat("LIST ", path, ": not served by this API server (404); treated as empty"));
        replace({});
        *listed = true;
        MaybeMarkSynced();
        if (!SleepFor(options_.not_served_retry_ms)) return;
        continue;
      }
      if (!status.ok()) {
        ++stats_.errors;
        Log(absl::StrCat("LIST ", path, " failed (retry in ", backoff, " ms): ", status.message()));
        if (!SleepFor(backoff)) return;
        backoff = std::min(backoff * 2, options_.backoff_max_ms);
        continue;
      }
      ++stats_.lists;
      replace(items);
      rv = list_rv;
      need_list = false;
      *listed = true;
      MaybeMarkSynced();
    }
    absl::Status status = client_->Watch(path, field_selector, rv, options_.watch_timeout_s, [&](const WatchEvent& ev) {
      ++stats_.watch_events;
      std::string v = ResourceVersionOf(ev.object);
      if (!v.empty()) rv = v;
      if (ev.type != "BOOKMARK") event(ev);
      backoff = options_.backoff_initial_ms;  // progress
      return !stop_;
    });
    if (stop_) return;
    if (status.ok()) continue;  // the server ended the watch: resume from rv
    if (IsGone(status)) {
      ++stats_.relists_after_gone;
      Log(absl::StrCat("WATCH ", path, ": resourceVersion ", rv, " is gone (410); relisting"));
      need_list = true;
      continue;
    }
    ++stats_.errors;
    Log(absl::StrCat("WATCH ", path, " failed (retry in ", backoff, " ms): ", status.message()));
    if (!SleepFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.backoff_max_ms);
  }
}

}  // namespace rackwise::k8s
