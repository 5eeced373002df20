// See limit_follower.h.
#include "limit_follower.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "http_client.h"

namespace rackwise::node_agent {

std::vector<PodWatts> SteerPods(std::vector<PodWatts> annotated, const k8s::LimitsDocument& document,
                                const std::string& node) {
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < annotated.size(); ++i) by_key[annotated[i].Key()] = i;
  for (const k8s::SteeredLimit& entry : document.allocations) {
    for (const k8s::SteeredPod& pod : entry.pods) {
      if (pod.node != node) continue;
      auto known = by_key.find(pod.namespace_ + "/" + pod.name);
      if (known != by_key.end()) {
        PodWatts& p = annotated[known->second];
        // Another incarnation, or an annotation the agent refuses: the entry changes nothing.
        if (p.uid != pod.uid || !p.error.empty()) continue;
        p.milliwatts_per_gpu = std::min(p.milliwatts_per_gpu, entry.milliwatts_per_gpu);
        continue;
      }
      if (entry.milliwatts_per_gpu >= entry.declared_milliwatts_per_gpu) continue;  // not held: nothing to set
      by_key[pod.namespace_ + "/" + pod.name] = annotated.size();
      annotated.push_back(PodWatts{pod.namespace_, pod.name, pod.uid, entry.milliwatts_per_gpu, ""});
    }
  }
  return annotated;
}

namespace {

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--limits-token-file ", path, ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty() || absl::StrContains(token, "\n")) {
    return absl::InvalidArgumentError(absl::StrCat("--limits-token-file ", path, ": want one line holding a token"));
  }
  return token;
}

// "http(s)://host:port[/prefix]" split up; false when it is not that.
bool SplitUrl(const std::string& url, bool* https, std::string* host, int* port, std::string* prefix) {
  size_t start = 0;
  if (absl::StartsWith(url, "http://")) {
    *https = false, start = 7;
  } else if (absl::StartsWith(url, "https://")) {
    *https = true, start = 8;
  } else {
    return false;
  }
  const size_t slash = url.find('/', start);
  const std::string authority = url.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
  *prefix = slash == std::string::npos ? "" : url.substr(slash);
  while (!prefix->empty() && prefix->back() == '/') prefix->pop_back();
  const size_t colon = authority.rfind(':');
  *port = *https ? 443 : 80;
  *host = authority.substr(0, colon);
  if (colon != std::string::npos && !absl::SimpleAtoi(authority.substr(colon + 1), port)) return false;
  return !host->empty() && *port > 0 && *port < 65536;
}

}  // namespace

absl::StatusOr<k8s::LimitsDocument> FetchLimits(const LimitsSource& source, const std::string& node) {
  bool https = false;
  std::string host, prefix;
  int port = 0;
  if (!SplitUrl(source.url, &https, &host, &port, &prefix)) {
    return absl::InvalidArgumentError(absl::StrCat("--limits-url ", source.url, ": want http(s)://HOST:PORT[/PATH]"));
  }
  const auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(source.timeout_s));
  http::HttpClient client({.tls = {.ca_file = source.ca_file},
                           .connect_timeout = timeout,
                           .idle_timeout = timeout,
                           .total_timeout = timeout});
  http::HttpRequest request{.url = absl::StrCat(https ? "https://" : "http://", host, ":", port, prefix,
                                                "/limits?node=", http::UrlEncode(node))};
  if (!source.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadToken(source.token_file);
    if (!token.ok()) return token.status();
    request.headers.push_back("Authorization: Bearer " + *token);
  }
  const std::string what = absl::StrCat("GET ", source.url, "/limits?node=", node);
  absl::StatusOr<http::HttpAnswer> answer = client.Send(request);
  if (!answer.ok()) return absl::UnavailableError(absl::StrCat(what, ": ", answer.status().message()));
  if (answer->status != 200) {
    return absl::UnavailableError(absl::StrCat(what, ": HTTP ", answer->status, ": ", answer->body.substr(0, 200)));
  }
  return k8s::ParseLimitsDocument(answer->body);
}

LimitFollower::LimitFollower(std::string node, std::function<absl::StatusOr<k8s::LimitsDocument>()> fetch,
                             std::function<void(const std::string&)> log)
    : node_(std::move(node)), fetch_(std::move(fetch)), log_(std::move(log)) {}

std::vector<PodWatts> LimitFollower::Steer(std::vector<PodWatts> annotated) {
  absl::StatusOr<k8s::LimitsDocument> fetched = fetch_();
  if (!fetched.ok()) {
    ++failures_;
    const std::string error(fetched.status().message());
    if (error != last_error_) {
      log_(absl::StrCat("steered limits: ", error, "; the last ones received (generation ", last_.generation,
                        ") stay in force"));
    }
    last_error_ = error;
    return SteerPods(std::move(annotated), last_, node_);
  }
  if (!last_error_.empty()) log_("steered limits: the extender answers again");
  last_error_.clear();
  // One line per pod whose target changed, so that the log tells when and why a GPU limit moved.
  std::map<std::string, int64_t> before;
  for (const k8s::SteeredLimit& e : last_.allocations)
    for (const k8s::SteeredPod& p : e.pods) before[p.namespace_ + "/" + p.name] = e.milliwatts_per_gpu;
  for (const k8s::SteeredLimit& e : fetched->allocations) {
    for (const k8s::SteeredPod& p : e.pods) {
      const std::string key = p.namespace_ + "/" + p.name;
      auto was = before.find(key);
      if (was != before.end() && was->second == e.milliwatts_per_gpu) continue;
      if (was == before.end() && e.milliwatts_per_gpu >= e.declared_milliwatts_per_gpu) continue;
      log_(absl::StrCat("steered limits (generation ", fetched->generation, "): pod ", key, " -> ",
                        e.milliwatts_per_gpu / 1000.0, " W per GPU (declared ", e.declared_milliwatts_per_gpu / 1000.0,
                        " W)"));
    }
  }
  last_ = std::move(*fetched);
  return SteerPods(std::move(annotated), last_, node_);
}

SteeringStatus LimitFollower::status() const {
  SteeringStatus s;
  s.generation = last_.generation;
  s.fetch_failures = failures_;
  for (const k8s::SteeredLimit& e : last_.allocations) {
    if (e.milliwatts_per_gpu >= e.declared_milliwatts_per_gpu) continue;
    for (const k8s::SteeredPod& p : e.pods) {
      if (p.node == node_) s.steered.emplace_back(p.namespace_ + "/" + p.name, e.milliwatts_per_gpu);
    }
  }
  return s;
}

}  // namespace rackwise::node_agent
