// The real rackwise-extender process. Under eight concurrent 50 MB /filter bodies (full NodeLists, as
// kube-scheduler sends without nodeCacheCapable, half of them naming nodes the cluster does not have): every
// request is answered, and the process's peak resident memory (VmHWM from /proc) stays under 1 GiB. Before
// the body budget, one 54 MB body peaked at ~750 MB and six at once at 3.1 GB. At start-up, a placeholder or
// short admin token is refused with a clear error.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "extender_process.h"
#include "raw_socket.h"

namespace rackwise::k8s::testing {
namespace {

// A NodeList of realistic Node objects (labels, allocatable, capacity, images) of at least `bytes`.
std::string LargeFilterBody(size_t bytes) {
  std::string images;
  for (int i = 0; i < 24; ++i) {
    absl::StrAppend(&images, i ? "," : "", R"({"names":["nvcr.io/nvidia/pytorch@sha256:)", i,
                    R"(0123456789abcdef0123456789abcdef0123456789abcdef"],"sizeBytes":)", 1000000 + i, "}");
  }
  std::string body =
      R"({"Pod":{"metadata":{"name":"big","namespace":"ml","uid":"u-big"},"spec":{"containers":[{"name":"m",)"
      R"("resources":{"limits":{"nvidia.com/gpu":"1"}}}]}},"NodeNames":null,"Nodes":{"kind":"NodeList",)"
      R"("apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[)";
  for (int i = 0; body.size() < bytes; ++i) {
    // Odd items name a described node (gpu001..gpu512), even ones a node the cluster does not have.
    char described[16];
    std::snprintf(described, sizeof described, "gpu%03d", 1 + (i / 2) % 512);
    std::string name = i % 2 ? described : absl::StrCat("unknown-node-", i);
    absl::StrAppend(&body, i ? "," : "", R"({"metadata":{"name":")", name, R"(","uid":"uid-)", i,
                    R"(","labels":{"kubernetes.io/hostname":")", name,
                    R"(","nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"8",)"
                    R"("topology.kubernetes.io/zone":"zone-a"}},"status":{"allocatable":{"cpu":"192",)"
                    R"("memory":"2063731564Ki","nvidia.com/gpu":"8"},"capacity":{"cpu":"192",)"
                    R"("memory":"2063731564Ki","nvidia.com/gpu":"8"},"images":[)",
                    images, "]}}");
  }
  body.append("]}}");
  return body;
}

TEST(HttpMemoryTest, EightConcurrent50MbBodiesStayUnderOneGiB) {
  namespace fs = std::filesystem;
  const std::string log = (fs::temp_directory_path() / absl::StrCat("rackwise-memory-test-", ::getpid(), ".log"));
  ExtenderProcess extender;
  std::string failed = extender.Start(RACKWISE_EXTENDER_BIN,
                                      {"--cluster", RACKWISE_SOURCE_DIR "/examples/h100-512.yaml", "--listen",
                                       "127.0.0.1:0", "--grpc-listen", "", "--request-timeout-ms", "120000"},
                                      log);
  ASSERT_EQ(failed, "");
  const std::string body = LargeFilterBody(50u << 20);
  const std::string head = absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                                        "Connection: close\r\nContent-Length: ", body.size(), "\r\n\r\n");
  std::vector<std::string> answers(8);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < answers.size(); ++i) {
    clients.emplace_back([&, i] {
      int fd = ConnectLoopback(extender.port());
      if (fd < 0) return;
      if (SendAll(fd, head) && SendAll(fd, body)) answers[i] = ReadUntilClosed(fd, std::chrono::seconds(300));
      ::close(fd);
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(extender.Alive()) << extender.Log();
  const long peak_kb = extender.StatusKb("VmHWM");
  for (const std::string& a : answers) {
    EXPECT_EQ(a.rfind("HTTP/1.1 200", 0), 0u) << a.substr(0, 300);
    EXPECT_NE(a.find("\"FailedAndUnresolvableNodes\":{\"unknown-node-0\""), std::string::npos);
  }
  std::printf("rackwise-extender peak resident memory (VmHWM) after 8 x %zu-byte bodies: %ld kB\n", body.size(),
              peak_kb);
  EXPECT_GT(peak_kb, 0);
  EXPECT_LT(peak_kb, 1024 * 1024);
  extender.Kill();
  fs::remove(log);
}

// The admin token guards the gRPC port.
TEST(ExtenderStartupTest, PlaceholderOrShortAdminTokenIsRefused) {
  namespace fs = std::filesystem;
  const fs::path token = fs::temp_directory_path() / absl::StrCat("rackwise-token-test-", ::getpid());
  for (const char* bad : {"replace-me-with-openssl-rand-hex-32", "0123456789abcdef"}) {
    std::FILE* f = std::fopen(token.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "%s\n", bad);
    std::fclose(f);
    std::string output;
    int code =
        ExtenderProcess::Run(RACKWISE_EXTENDER_BIN,
                             {"--cluster", RACKWISE_SOURCE_DIR "/examples/h100-512.yaml", "--listen", "127.0.0.1:0",
                              "--grpc-listen", "127.0.0.1:0", "--admin-token-file", token.string()},
                             &output);
    EXPECT_EQ(code, 1) << output;
    EXPECT_NE(output.find(token.string()), std::string::npos) << output;
    EXPECT_NE(output.find("openssl rand -hex 32"), std::string::npos) << output;
  }
  fs::remove(token);
}

// /metrics of the real process, after a filter and a bind, passes `promtool check metrics` (the Prometheus
// project's own linter: names, types, HELP, units, histogram shape).
TEST(ExtenderMetricsTest, PromtoolAcceptsMetrics) {
  namespace fs = std::filesystem;
  const std::string log = fs::temp_directory_path() / absl::StrCat("rackwise-promtool-test-", ::getpid(), ".log");
  ExtenderProcess extender;
  ASSERT_EQ(extender.Start(RACKWISE_EXTENDER_BIN,
                           {"--cluster", RACKWISE_SOURCE_DIR "/examples/h100-512.yaml", "--listen", "127.0.0.1:0",
                            "--grpc-listen", ""},
                           log),
            "");
  auto exchange = [&](const std::string& request) {
    int fd = ConnectLoopback(extender.port());
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(SendAll(fd, request));
    std::string answer = ReadUntilClosed(fd, std::chrono::seconds(30));
    ::close(fd);
    return answer;
  };
  auto post = [&](const std::string& path, const std::string& body) {
    return exchange(absl::StrCat(
        "POST ", path, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
  };
  const std::string pod = R"({"metadata":{"name":"p","namespace":"ml","uid":"u1"},"spec":{"containers":[{"name":"m",)"
                          R"("resources":{"limits":{"nvidia.com/gpu":"8"}}}]}})";
  EXPECT_EQ(post("/filter", absl::StrCat(R"({"Pod":)", pod, R"(,"NodeNames":["gpu001","nowhere"]})"))
                .rfind("HTTP/1.1 200", 0),
            0u);
  EXPECT_EQ(
      post("/bind", R"({"PodName":"p","PodNamespace":"ml","PodUID":"u1","Node":"gpu001"})").rfind("HTTP/1.1 200", 0),
      0u);
  EXPECT_EQ(post("/filter", "{").rfind("HTTP/1.1 400", 0), 0u);
  std::string metrics = exchange("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u) << metrics;
  metrics = metrics.substr(metrics.find("\r\n\r\n") + 4);
  const fs::path file = fs::temp_directory_path() / absl::StrCat("rackwise-metrics-", ::getpid(), ".txt");
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(metrics.data(), 1, metrics.size(), f);
    std::fclose(f);
  }
  std::string output;
  int code = ExtenderProcess::Run("/bin/sh", {"-c", "promtool check metrics < " + file.string()}, &output);
  EXPECT_EQ(code, 0) << output << "\n" << metrics;
  EXPECT_NE(metrics.find("rackwise_build_info{version=\""), std::string::npos);
  EXPECT_NE(metrics.find("rackwise_http_errors_total{code=\"400\"} 1\n"), std::string::npos) << metrics;
  fs::remove(file);
  extender.Kill();
  fs::remove(log);
}

}  // namespace
}  // namespace rackwise::k8s::testing
