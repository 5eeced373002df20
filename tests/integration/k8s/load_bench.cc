// Load test of the extender on loopback: kube-scheduler's filter + prioritize for each pod, with every one of
// N node names in each call (nodeCacheCapable: true, percentageOfNodesToScore: 100), from C concurrent
// keep-alive clients. The same run measures a no-op server (same HTTP stack and settings, canned answers of
// the same size, no parsing, no placement) as the baseline. Bounded and self-stopping: --pods per phase and
// --max-seconds per phase. Prints median and p99 per pod and pods/s; --json for machines. Not a timed
// pass/fail test: `--smoke` (tiny) checks that every answer over HTTP equals the in-process answer.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <curl/curl.h>
#include <httplib.h>
#include <CLI/CLI.hpp>
#include "absl/strings/numbers.h"

#include "extender_service.h"
#include "http_server.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s {
namespace {

struct PhaseResult {
  std::string name;
  size_t pods = 0;
  size_t errors = 0;
  double seconds = 0;
  double median_ms = 0, p99_ms = 0, max_ms = 0;
  std::vector<double> latencies_ms;

  // Adds another slice of the same phase (phases alternate in slices so that both see the same machine).
  void Merge(const PhaseResult& slice) {
    errors += slice.errors;
    seconds += slice.seconds;
    latencies_ms.insert(latencies_ms.end(), slice.latencies_ms.begin(), slice.latencies_ms.end());
    std::vector<double> all = latencies_ms;
    std::sort(all.begin(), all.end());
    pods = all.size();
    if (!all.empty()) {
      median_ms = all[all.size() / 2];
      p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
      max_ms = all.back();
    }
  }
};

std::string PodJson(int i, int gpus) {
  Json pod = {
      {"metadata", {{"name", "bench-" + std::to_string(i)}, {"namespace", "bench"}, {"uid", "u" + std::to_string(i)}}},
      {"spec",
       {{"containers",
         Json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
  return pod.dump();
}

// One keep-alive connection, as kube-scheduler's Go http.Transport keeps one per extender. libcurl rather than
// cpp-httplib's client: it reads answers in large chunks, as Go does, so the load generator does not eat the
// two cores it shares with the server under test.
class BenchClient {
 public:
  explicit BenchClient(int port) : base_("http://127.0.0.1:" + std::to_string(port)) {
    curl_ = curl_easy_init();
    curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);  // as Go's net/http does
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);     // threads; no signal juggling per request
    curl_easy_setopt(curl_, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &BenchClient::Append);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &body_);
    curl_easy_setopt(curl_, CURLOPT_POST, 1L);
    body_.reserve(1 << 20);
  }
  ~BenchClient() { curl_easy_cleanup(curl_); }
  BenchClient(const BenchClient&) = delete;
  BenchClient& operator=(const BenchClient&) = delete;

  // POSTs `body`; true on HTTP 200. The answer is in body() until the next call.
  bool Post(const std::string& path, const std::string& body, size_t pod) {
    body_.clear();
    std::string url = base_ + path;
    std::string pod_header = "X-Bench-Pod: " + std::to_string(pod);
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip; Go does not send it
    headers = curl_slist_append(headers, pod_header.c_str());
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    CURLcode rc = curl_easy_perform(curl_);
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    return rc == CURLE_OK && status == 200;
  }
  const std::string& body() const { return body_; }

 private:
  static size_t Append(char* data, size_t size, size_t n, void* out) {
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
  }
  std::string base_;
  CURL* curl_ = nullptr;
  std::string body_;
};

// With `expected` (filter and prioritize answers per pod), every answer must equal it byte for byte: nothing
// is bound during the run, so the extender must answer each repeat exactly as it answered the first time.
struct Expected {
  const std::vector<std::string>* filter = nullptr;
  const std::vector<std::string>* prioritize = nullptr;
};

PhaseResult RunPhase(const std::string& name, int port, const std::vector<std::string>& filter_bodies,
                     const std::vector<std::string>& prioritize_bodies, size_t pods, int clients, double max_seconds,
                     Expected expected = {}) {
  std::atomic<size_t> next{0}, errors{0};
  std::vector<std::vector<double>> lat(clients);
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::duration<double>(max_seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      BenchClient cli(port);
      for (;;) {
        size_t i = next.fetch_add(1);
        if (i >= pods || std::chrono::steady_clock::now() > deadline) return;
        const size_t pod = i % filter_bodies.size();
        auto t0 = std::chrono::steady_clock::now();
        bool ok = cli.Post("/filter", filter_bodies[pod], pod);
        if (ok && expected.filter) ok = cli.body() == (*expected.filter)[pod];
        ok = cli.Post("/prioritize", prioritize_bodies[pod], pod) && ok;
        auto t1 = std::chrono::steady_clock::now();
        if (ok && expected.prioritize) ok = cli.body() == (*expected.prioritize)[pod];
        if (!ok) ++errors;
        lat[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  PhaseResult r;
  r.name = name;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.errors = errors;
  for (auto& v : lat) r.latencies_ms.insert(r.latencies_ms.end(), v.begin(), v.end());
  return r;
}

int Main(int argc, char** argv) {
  CLI::App app{"rackwise-extender loopback load test (filter + prioritize per pod)"};
  int nodes = 5000, clients = 2, threads = 0, warmup = 200, slices = 10;
  size_t pods = 5000;
  double max_seconds = 60, fill = 0.5;
  bool smoke = false, json = false, no_cache = false;
  app.add_option("--nodes", nodes, "node names per call (HGX H100 nodes, 8 per rack)")->check(CLI::Range(8, 100000));
  app.add_option("--pods", pods, "pods per phase");
  app.add_option("--clients", clients, "concurrent keep-alive clients")->check(CLI::Range(1, 64));
  app.add_option("--threads", threads,
                 "server threads: the extender's I/O threads and the no-op server's workers (default: one per core, "
                 "the extender's default)")
      ->check(CLI::Range(1, 64));
  app.add_option("--max-seconds", max_seconds, "stop a phase after this long");
  app.add_option("--slices", slices, "the phases alternate in this many slices each (a shared machine drifts)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--fill", fill, "share of GPUs allocated before the run")->check(CLI::Range(0.0, 0.95));
  app.add_flag("--no-candidate-cache", no_cache,
               "decode every node list afresh (what a pod pays when the list differs from recent ones)");
  app.add_flag("--smoke", smoke, "tiny run that checks answers (for CTest)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (smoke) {
    nodes = 200;
    pods = 40;
    warmup = 5;
    max_seconds = 30;
  }

  SyntheticClusterSpec spec;
  spec.name = "bench";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, (nodes + 7) / 8, 8});
  auto topology = Topology::Build(BuildSyntheticCluster(spec));
  if (!topology.ok()) {
    std::fprintf(stderr, "%s\n", std::string(topology.status().message()).c_str());
    return 1;
  }
  ExtenderMetrics metrics;
  ExtenderOptions options;
  if (no_cache) options.candidate_cache_entries = 0;
  ExtenderService service(std::make_unique<Topology>(std::move(*topology)), options, nullptr, &metrics);
  CandidateNodeCache* cache = service.candidate_cache();
  service.SetSynced(true);
  std::vector<std::string> names;
  for (const Node& n : service.topology().nodes()) names.push_back(n.name);
  names.resize(nodes);

  // Fill the cluster partly so that filter has real work (partly used nodes, power headroom).
  std::mt19937 rng(7);
  const int total = service.topology().total_gpus();
  int used = 0;
  for (int i = 0; used < total * fill && i < total; ++i) {
    PlacementRequest r;
    r.id = "fill-" + std::to_string(i);
    r.gpus = 1 << (rng() % 4);
    r.gpus_per_node = r.gpus;
    r.locality = Locality::kNone;
    auto o = service.Place(r, true);
    if (o.ok() && std::holds_alternative<PlacementDecision>(*o)) used += r.gpus;
  }

  // Sixteen pods (1, 2, 4, 8 GPUs). As kube-scheduler does, prioritize gets only the nodes filter kept.
  std::string names_json = Json(names).dump();
  std::vector<std::string> filter_bodies, prioritize_bodies, filter_answers, prioritize_answers;
  size_t feasible_total = 0;
  for (int i = 0; i < 16; ++i) {
    std::string pod = PodJson(i, 1 << (i % 4));
    std::string body = "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":" + names_json + "}";
    absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body);
    if (!args.ok()) return 1;
    FilterResult fr = service.Filter(*args, 0);
    feasible_total += fr.feasible.size();
    filter_answers.push_back(EncodeFilterResult(fr, *args));
    filter_bodies.push_back(body);
    std::string pbody =
        "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":" + Json(FeasibleNames(fr, *args)).dump() + "}";
    absl::StatusOr<ExtenderArgs> pargs = ParseExtenderArgs(pbody);
    prioritize_answers.push_back(EncodeHostPriorityList(pargs->candidate_nodes(), *service.Prioritize(*pargs, 0)));
    prioritize_bodies.push_back(std::move(pbody));
  }

  // In-process breakdown of one pod's work (no HTTP): decode, filter, encode, prioritize, encode.
  double t_parse = 0, t_filter = 0, t_enc_f = 0, t_prio = 0, t_enc_p = 0;
  const int kBreakdownRounds = smoke ? 3 : 50;
  for (int i = 0; i < kBreakdownRounds; ++i) {
    auto a = std::chrono::steady_clock::now();
    absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(filter_bodies[i % filter_bodies.size()], cache);
    auto b = std::chrono::steady_clock::now();
    FilterResult fr = service.Filter(*args, 0);
    auto c = std::chrono::steady_clock::now();
    std::string fo = EncodeFilterResult(fr, *args);
    auto d = std::chrono::steady_clock::now();
    absl::StatusOr<ExtenderArgs> pargs = ParseExtenderArgs(prioritize_bodies[i % prioritize_bodies.size()], cache);
    absl::StatusOr<std::vector<int>> pr = service.Prioritize(*pargs, 0);
    auto e = std::chrono::steady_clock::now();
    std::string po = EncodeHostPriorityList(pargs->candidate_nodes(), *pr);
    auto f = std::chrono::steady_clock::now();
    auto us = [](auto x, auto y) { return std::chrono::duration<double, std::micro>(y - x).count(); };
    t_parse += us(a, b);
    t_filter += us(b, c);
    t_enc_f += us(c, d);
    t_prio += us(d, e);
    t_enc_p += us(e, f);
  }
  if (!json) {
    std::printf("in-process per pod (us): decode %.0f, filter %.0f, encode %.0f, decode+prioritize %.0f, encode %.0f\n",
                t_parse / kBreakdownRounds, t_filter / kBreakdownRounds, t_enc_f / kBreakdownRounds,
                t_prio / kBreakdownRounds, t_enc_p / kBreakdownRounds);
  }

  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  HttpServerOptions http;
  http.threads = threads;
  ExtenderHttpServer server(&service, http);
  if (!server.Start().ok()) return 1;

  // The baseline: a no-op cpp-httplib server (the extender's front end before Boost.Beast, kept as the fixed
  // floor so that ratios stay comparable across runs) with the same requests; it answers with the extender's own
  // answers for that pod (picked by a header, so it parses nothing), so both phases move the same bytes.
  auto pod_index = [](const httplib::Request& req) {
    size_t i = 0;
    absl::SimpleAtoi(req.get_header_value("X-Bench-Pod"), &i);
    return i % 16;
  };
  httplib::Server noop;
  noop.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  noop.set_keep_alive_max_count(1'000'000);
  noop.set_tcp_nodelay(true);
  noop.Post("/filter", [&](const httplib::Request& req, httplib::Response& res) {
    res.set_content(filter_answers[pod_index(req)], "application/json");
  });
  noop.Post("/prioritize", [&](const httplib::Request& req, httplib::Response& res) {
    res.set_content(prioritize_answers[pod_index(req)], "application/json");
  });
  int noop_port = noop.bind_to_any_port("127.0.0.1");
  std::thread noop_thread([&] { noop.listen_after_bind(); });
  while (!noop.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // Answers are checked in --smoke, and always in the warm-up (where the candidate cache fills).
  const Expected expected{&filter_answers, &prioritize_answers};
  const Expected check = smoke ? expected : Expected{};
  PhaseResult warm =
      RunPhase("warmup", server.port(), filter_bodies, prioritize_bodies, warmup, clients, max_seconds, expected);
  if (warm.errors != 0) {
    std::fprintf(stderr, "the extender's answers over HTTP differ from its in-process answers\n");
    return 1;
  }
  RunPhase("warmup", noop_port, filter_bodies, prioritize_bodies, warmup, clients, max_seconds);
  PhaseResult base, ext;
  base.name = "noop";
  ext.name = "extender";
  const size_t per_slice = std::max<size_t>(1, pods / static_cast<size_t>(slices));
  for (int k = 0; k < slices; ++k) {
    base.Merge(
        RunPhase("noop", noop_port, filter_bodies, prioritize_bodies, per_slice, clients, max_seconds / slices, check));
    ext.Merge(RunPhase("extender", server.port(), filter_bodies, prioritize_bodies, per_slice, clients,
                       max_seconds / slices, check));
  }
  noop.stop();
  noop_thread.join();
  server.Stop();

  if (json) {
    Json out = Json::object();
    for (const PhaseResult* r : {&base, &ext}) {
      out[r->name] = {{"pods", r->pods},
                      {"errors", r->errors},
                      {"seconds", r->seconds},
                      {"median_ms", r->median_ms},
                      {"p99_ms", r->p99_ms},
                      {"max_ms", r->max_ms},
                      {"pods_per_s", r->pods / std::max(r->seconds, 1e-9)}};
    }
    out["nodes"] = nodes;
    out["slices"] = slices;
    out["candidate_cache"] = !no_cache;
    out["candidate_cache_hits"] = cache->hits();
    out["candidate_cache_misses"] = cache->misses();
    out["clients"] = clients;
    out["server_threads"] = threads;
    out["allocated_gpus"] = used;
    out["mean_feasible_nodes"] = feasible_total / 16;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf(
        "nodes=%d clients=%d server_threads=%d slices=%d candidate_cache=%s allocated_gpus=%d/%d "
        "mean_feasible_nodes=%zu\n",
        nodes, clients, threads, slices, no_cache ? "off" : "on", used, total, feasible_total / 16);
    std::printf("candidate lists: %llu cache hits, %llu misses\n", static_cast<unsigned long long>(cache->hits()),
                static_cast<unsigned long long>(cache->misses()));
    std::printf("%-9s %7s %7s %10s %10s %10s %10s\n", "phase", "pods", "errors", "median_ms", "p99_ms", "max_ms",
                "pods/s");
    for (const PhaseResult* r : {&base, &ext}) {
      std::printf("%-9s %7zu %7zu %10.3f %10.3f %10.3f %10.0f\n", r->name.c_str(), r->pods, r->errors, r->median_ms,
                  r->p99_ms, r->max_ms, r->pods / std::max(r->seconds, 1e-9));
    }
  }
  return (base.errors + ext.errors) == 0 && ext.pods > 0 ? 0 : 1;
}

}  // namespace
}  // namespace rackwise::k8s

int main(int argc, char** argv) { return rackwise::k8s::Main(argc, argv); }
