// HttpClient against a real HTTP server on loopback (cpp-httplib, in process).
#include "http_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "rackwise/testing/child_process.h"

namespace rackwise::http {
namespace {

using rackwise::testing::Eventually;

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/hello", [](const httplib::Request&, httplib::Response& res) { res.set_content("hi", "text/plain"); });
    server_.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content(R"({"message":"no such thing"})", "application/json");
    });
    server_.Post("/echo", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      last_authorization_ = req.get_header_value("Authorization");
      last_content_type_ = req.get_header_value("Content-Type");
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(4096, 'x'), "text/plain");
    });
    server_.Get("/port", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.remote_port), "text/plain");
    });
    // Answers its headers, then holds the stream open, one line per `lines_` step, until released.
    server_.Get("/stream", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(mu_);
        if (sent_ < 2) {
          ++sent_;
          const std::string line = absl::StrCat("{\"n\":", sent_, "}\n");
          lock.unlock();
          sink.write(line.data(), line.size());
          return true;
        }
        released_cv_.wait(lock, [this] { return released_; });
        sink.done();
        return true;
      });
    });
    // Says nothing until released: a server that hung.
    server_.Get("/silent", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      released_cv_.wait(lock, [this] { return released_; });
      res.set_content("late", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    ASSERT_TRUE(Eventually([this] { return server_.is_running(); }));
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    released_cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const { return absl::StrCat("http://127.0.0.1:", port_, path); }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int sent_ = 0;
  std::string last_authorization_, last_content_type_;
};

TEST_F(HttpClientTest, GetGathersTheAnswerWhateverItsStatus) {
  HttpClient client({});
  absl::StatusOr<HttpAnswer> ok = client.Send({.url = Url("/hello")});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "hi");
  absl::StatusOr<HttpAnswer> missing = client.Send({.url = Url("/missing")});
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"message":"no such thing"})");
}

TEST_F(HttpClientTest, PostSendsItsBodyAndHeaders) {
  HttpClient client({});
  HttpRequest post{.method = HttpRequest::Method::kPost,
                   .url = Url("/echo"),
                   .headers = {"Authorization: Bearer t0ken", "Content-Type: application/json"},
                   .body = R"({"a":1})"};
  absl::StatusOr<HttpAnswer> answer = client.Send(post);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->status, 201);
  EXPECT_EQ(answer->body, R"({"a":1})");
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(last_authorization_, "Bearer t0ken");
  EXPECT_EQ(last_content_type_, "application/json");
}

TEST_F(HttpClientTest, KeepsTheConnectionBetweenRequests) {
  HttpClient client({});
  absl::StatusOr<HttpAnswer> first = client.Send({.url = Url("/port")});
  absl::StatusOr<HttpAnswer> second = client.Send({.url = Url("/port")});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->body, second->body) << "the second request came from another client port";
}

TEST_F(HttpClientTest, RefusesAnAnswerLargerThanItsBound) {
  HttpClient client({.max_body_bytes = 1000});
  absl::StatusOr<HttpAnswer> answer = client.Send({.url = Url("/big")});
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kResourceExhausted) << answer.status();
  HttpClient roomy({.max_body_bytes = 4096});
  EXPECT_TRUE(roomy.Send({.url = Url("/big")}).ok());
}

TEST_F(HttpClientTest, AServerThatSaysNothingIsATimeout) {
  HttpClient client({.idle_timeout = std::chrono::milliseconds(1000)});
  absl::StatusOr<HttpAnswer> answer = client.Send({.url = Url("/silent")});
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDeadlineExceeded) << answer.status();
}

TEST_F(HttpClientTest, NoServerIsUnavailable) {
  const int port = rackwise::testing::FreeLoopbackPort();  // bound and released: nothing listens there
  ASSERT_GT(port, 0);
  HttpClient client({});
  absl::StatusOr<HttpAnswer> answer = client.Send({.url = absl::StrCat("http://127.0.0.1:", port, "/")});
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnavailable) << answer.status();
}

TEST_F(HttpClientTest, StreamsAndEndsWhenTheReaderSaysSo) {
  HttpClient client({});
  std::string seen;
  int status = 0;
  absl::StatusOr<HttpAnswer> answer = client.Stream(
      {.url = Url("/stream")},
      [&](absl::string_view chunk) {
        seen.append(chunk.data(), chunk.size());
        return seen.find("{\"n\":2}\n") == std::string::npos;
      },
      &status);
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kCancelled) << answer.status();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(seen, "{\"n\":1}\n{\"n\":2}\n");
}

TEST_F(HttpClientTest, ACancelEndsAnIdleStreamAndRefusesTheNextRequest) {
  std::atomic<bool> cancel{false};
  HttpClient client({.cancel = &cancel});
  std::atomic<int> chunks{0};
  absl::Status result;
  std::thread reader([&] {
    int status = 0;
    result = client
                 .Stream(
                     {.url = Url("/stream")},
                     [&](absl::string_view) {
                       ++chunks;
                       return true;
                     },
                     &status)
                 .status();
  });
  ASSERT_TRUE(Eventually([&] { return chunks.load() >= 1; }));
  cancel = true;  // the stream is idle now: only the progress callback can see this
  reader.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled) << result;
  EXPECT_EQ(client.Send({.url = Url("/hello")}).status().code(), absl::StatusCode::kCancelled);
}

TEST_F(HttpClientTest, AnotherStatusOnAStreamIsGathered) {
  HttpClient client({});
  int status = 0;
  bool called = false;
  absl::StatusOr<HttpAnswer> answer = client.Stream(
      {.url = Url("/missing")},
      [&](absl::string_view) {
        called = true;
        return true;
      },
      &status);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(called);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(answer->body, R"({"message":"no such thing"})");
}

// Against an independent decoder: every byte string comes back, and only unreserved characters and %XX appear.
TEST(UrlEncode, RoundTripsEveryByteThroughUnreservedCharacters) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string value(random() % 24, '\0');
    for (char& c : value) c = static_cast<char>(random() % 256);
    const std::string encoded = UrlEncode(value);
    EXPECT_EQ(httplib::detail::decode_url(encoded, false), value);
    for (size_t i = 0; i < encoded.size(); ++i) {
      const unsigned char c = encoded[i];
      if (c == '%') {
        ASSERT_LT(i + 2, encoded.size()) << encoded;
        i += 2;
        continue;
      }
      EXPECT_TRUE(std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') << encoded;
    }
  }
}

}  // namespace
}  // namespace rackwise::http
