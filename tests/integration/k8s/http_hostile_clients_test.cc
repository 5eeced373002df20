// The HTTP front end against hostile, slow and broken clients over real loopback sockets: idle and slow
// connections must not delay kube-scheduler's requests, a stalled request gets 408 and loses its connection,
// pipelined requests are answered in order, a full server sheds its longest-idle connection, and an
// oversized body gets 413 before it is read. Each refusal is counted once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender_fixture.h"
#include "raw_socket.h"

namespace rackwise::k8s::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class HostileClientsTest : public ExtenderHttpFixture {
 protected:
  void TearDown() override {
    for (int fd : sockets_) ::close(fd);
    ExtenderHttpFixture::TearDown();
  }
  int Open() {
    int fd = ConnectLoopback(server_->port());
    EXPECT_GE(fd, 0);
    sockets_.push_back(fd);
    return fd;
  }
  // Waits until the server counts `n` open connections (a state, not a sleep); false after 10 s.
  bool WaitForOpenConnections(size_t n) {
    auto until = Clock::now() + std::chrono::seconds(10);
    while (server_->stats().open_connections < n) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }
  // Milliseconds for one /filter on the fixture's keep-alive connection; fails the test on a wrong answer.
  double TimedFilterMs(const std::string& body) {
    auto start = Clock::now();
    Json r = Post("/filter", body);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    EXPECT_EQ(r["NodeNames"].size(), 2u) << r.dump();
    return ms;
  }
  std::vector<double> TimedFilters(const std::string& body, int n) {
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) ms.push_back(TimedFilterMs(body));
    std::sort(ms.begin(), ms.end());
    return ms;
  }
  std::vector<int> sockets_;
};

// The bound: hostile clients may add at most 100 ms to the median /filter. Why this holds with margin on a
// loaded 2-core machine: the old thread-per-connection server answered nothing for two minutes here (every
// worker waited on an idle client), so a blocked front end misses the bound by three orders of magnitude; a
// working one spends a few microseconds per dribbled byte (64 clients x 50 bytes/s), well under 1% of a core.
// Scheduling noise from other processes hits single requests (10-50 ms stalls), so the median of 21 requests
// is compared, and each single request only has to beat 1 s (the old server: 120 s).
TEST_F(HostileClientsTest, IdleAndSlowClientsDoNotDelayAFilter) {
  HttpServerOptions http;
  http.request_timeout_ms = 120'000;  // the slow clients stay slow (not 408) for the whole measurement
  StartExtender(true, nullptr, http);
  const std::string body = ReadTestData("filter_args_lowercase.json");
  TimedFilters(body, 5);  // warm up: the keep-alive connection and the candidate cache
  const std::vector<double> quiet = TimedFilters(body, 21);

  for (int i = 0; i < 64; ++i) Open();  // idle: connect and send nothing
  std::vector<int> slow;
  for (int i = 0; i < 64; ++i) {
    int fd = Open();
    ASSERT_TRUE(SendAll(fd,
                        "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Length: 100000\r\n\r\n{\"Pod\":"));
    slow.push_back(fd);
  }
  ASSERT_TRUE(WaitForOpenConnections(1 + 64 + 64)) << server_->stats().open_connections;
  std::atomic<bool> stop{false};
  std::thread dribbler([&] {  // one more body byte from each slow client every 20 ms
    while (!stop) {
      for (int fd : slow) SendAll(fd, " ");
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  const std::vector<double> hostile = TimedFilters(body, 21);
  stop = true;
  dribbler.join();

  const double quiet_median = quiet[quiet.size() / 2], hostile_median = hostile[hostile.size() / 2];
  EXPECT_LT(hostile_median - quiet_median, 100.0)
      << "quiet median " << quiet_median << " ms, hostile median " << hostile_median << " ms";
  EXPECT_LT(hostile.back(), 1000.0) << "slowest filter among hostile clients";
  EXPECT_EQ(server_->stats().open_connections, 1u + 64 + 64);  // nobody was shed or dropped meanwhile
}

TEST_F(HostileClientsTest, StalledRequestGets408AndLosesItsConnection) {
  HttpServerOptions http;
  http.request_timeout_ms = 300;
  StartExtender(true, nullptr, http);
  int mid_body = Open();
  ASSERT_TRUE(SendAll(mid_body, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"Pod\":"));
  int mid_header = Open();
  ASSERT_TRUE(SendAll(mid_header, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Len"));
  for (int fd : {mid_body, mid_header}) {
    std::string answer = ReadUntilClosed(fd, milliseconds(10'000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
    EXPECT_NE(answer.find("not received within 300 ms"), std::string::npos) << answer;
  }
  EXPECT_EQ(metrics_.http_errors(408), 2u);
  // Still serving, and the stalled connections are gone.
  EXPECT_EQ(Post("/filter", ReadTestData("filter_args_lowercase.json"))["NodeNames"].size(), 2u);
  // Their sockets close once the server has drained them briefly (at most a second after the answer).
  auto until = Clock::now() + std::chrono::seconds(10);
  while (server_->stats().open_connections != 1 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(server_->stats().open_connections, 1u);
}

TEST_F(HostileClientsTest, IdleConnectionClosesAfterTheIdleTimeout) {
  HttpServerOptions http;
  http.idle_timeout_ms = 200;
  StartExtender(true, nullptr, http);
  int fd = Open();
  EXPECT_TRUE(PeerClosed(fd, milliseconds(10'000)));
  EXPECT_EQ(metrics_.http_errors(408), 0u);  // an idle client asked nothing: no answer, no error
}

TEST_F(HostileClientsTest, PipelinedRequestsAreAnsweredInOrder) {
  StartExtender();
  const std::string filter = ReadTestData("filter_args_lowercase.json");
  int fd = Open();
  ASSERT_TRUE(SendAll(fd, absl::StrCat("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                                       "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: ", filter.size(),
                                       "\r\n\r\n", filter, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
                                       "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  std::string answers = ReadUntilClosed(fd, milliseconds(10'000));
  size_t health = answers.find("HTTP/1.1 200"), nodes = answers.find("\"NodeNames\":[\"b1-r0001-n01\"");
  size_t missing = answers.find("HTTP/1.1 404"), ready = answers.find("ok: standalone");
  ASSERT_NE(ready, std::string::npos) << answers;
  EXPECT_LT(health, nodes);
  EXPECT_LT(nodes, missing);
  EXPECT_LT(missing, ready);
  EXPECT_EQ(metrics_.http_errors(404), 1u);
}

TEST_F(HostileClientsTest, FullServerShedsTheLongestIdleConnectionThenRefuses) {
  HttpServerOptions http;
  http.max_connections = 8;
  // The mid-header requests below must stay in their slots until the newcomer comes, however slow a busy machine
  // makes the steps between (the default 10 s would answer them 408 and free a slot).
  http.request_timeout_ms = 600'000;
  StartExtender(true, nullptr, http);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(Open());
    ASSERT_TRUE(WaitForOpenConnections(idle.size()));  // one at a time: connection i is idle longer than i+1
  }
  // A ninth client (kube-scheduler's keep-alive connection) gets in; the first idle one makes room.
  EXPECT_EQ(Post("/filter", ReadTestData("filter_args_lowercase.json"))["NodeNames"].size(), 2u);
  EXPECT_TRUE(PeerClosed(idle[0], milliseconds(5'000)));
  EXPECT_EQ(server_->stats().shed_connections, 1u);
  EXPECT_EQ(server_->stats().open_connections, 8u);

  // Now every slot is inside a request (mid-header): a newcomer is refused and counted once as a 503.
  auto wait_for = [&](size_t open, size_t idle_count) {
    auto until = Clock::now() + std::chrono::seconds(10);
    while (!(server_->stats().open_connections == open && server_->stats().idle_connections == idle_count)) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  };
  client_.reset();
  for (size_t i = 1; i < idle.size(); ++i) ASSERT_TRUE(SendAll(idle[i], "GET /healthz HTTP/1.1\r\n"));
  ASSERT_TRUE(wait_for(7, 0)) << server_->stats().open_connections << " open, " << server_->stats().idle_connections
                              << " idle";
  ASSERT_TRUE(SendAll(Open(), "GET /healthz HTTP/1.1\r\n"));  // takes the fixture client's slot
  ASSERT_TRUE(wait_for(8, 0)) << server_->stats().open_connections << " open, " << server_->stats().idle_connections
                              << " idle";
  int newcomer = Open();
  EXPECT_TRUE(PeerClosed(newcomer, milliseconds(5'000)));
  EXPECT_EQ(metrics_.http_errors(503), 1u);
  EXPECT_EQ(server_->stats().refused_connections, 1u);
}

TEST_F(HostileClientsTest, OversizedBodyGets413BeforeItIsSent) {
  HttpServerOptions http;
  http.max_body_bytes = 1 << 20;
  StartExtender(true, nullptr, http);
  int fd = Open();
  ASSERT_TRUE(SendAll(fd, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 52428800\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd, milliseconds(10'000));  // no body sent: the answer comes anyway
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("52428800 bytes is over the limit of 1048576"), std::string::npos) << answer;
  EXPECT_EQ(metrics_.http_errors(413), 1u);
}

TEST_F(HostileClientsTest, MalformedHttpGets400WithTheReasonCountedOnce) {
  StartExtender();
  int fd = Open();
  ASSERT_TRUE(SendAll(fd, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n"));
  std::string answer = ReadUntilClosed(fd, milliseconds(10'000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_NE(answer.find("malformed HTTP request"), std::string::npos) << answer;
  Post("/filter", "{\"Pod\": {", 400);
  EXPECT_EQ(metrics_.http_errors(400), 2u);
}

}  // namespace
}  // namespace rackwise::k8s::testing
