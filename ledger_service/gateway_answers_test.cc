// EtcdClient against a stand-in HTTP server that answers what a real etcd would not (wrong types, errors,
// silence): every case is a clear error naming the endpoint, never an exception or a silent default.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

#include "etcd_client.h"

namespace rackwise::ledger {
namespace {

class GatewayAnswersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/v3/kv/range", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(range_answer_, "application/json");
    });
    server_.Post("/v3/kv/txn", [this](const httplib::Request&, httplib::Response& res) {
      res.status = txn_status_;
      res.set_content(txn_answer_, "application/json");
    });
    server_.Post("/v3/lease/keepalive", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"result":{"header":{"revision":"3"},"ID":"7"}})", "application/json");
    });
    server_.Post("/v3/lease/grant", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      res.set_content(R"({"ID":"7","TTL":"2"})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    endpoint_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string endpoint_;
  std::string range_answer_ = "{}";
  std::string txn_answer_ = "{}";
  int txn_status_ = 200;
};

TEST_F(GatewayAnswersTest, WrongTypesAreErrorsNotExceptions) {
  EtcdClient client(endpoint_, 2000);
  for (const char* answer : {R"({"kvs":"nope"})", R"({"kvs":[3]})", R"({"kvs":[{"key":"@@@@"}]})",
                             R"({"kvs":[{"key":"YQ==","create_revision":"x"}]})", "[1]", "not json"}) {
    range_answer_ = answer;
    absl::StatusOr<std::vector<EtcdKeyValue>> got = client.GetPrefix("a");
    EXPECT_FALSE(got.ok()) << answer;
    EXPECT_NE(got.status().message().find(endpoint_), std::string::npos) << got.status();
  }
  range_answer_ = R"({"kvs":[{"key":"YQ==","value":"Yg==","create_revision":"5","mod_revision":6}]})";
  absl::StatusOr<std::vector<EtcdKeyValue>> good = client.GetPrefix("a");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->front().key, "a");
  EXPECT_EQ(good->front().value, "b");
  EXPECT_EQ(good->front().create_revision, 5);
  EXPECT_EQ(good->front().mod_revision, 6);
}

TEST_F(GatewayAnswersTest, TxnReadsProto3JsonDefaultsAndEtcdErrors) {
  EtcdClient client(endpoint_, 2000);
  txn_answer_ = R"({"header":{"revision":"9"}})";  // "succeeded": false is left out
  absl::StatusOr<EtcdTxnResult> failed = client.Txn({}, {});
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_FALSE(failed->succeeded);
  EXPECT_EQ(failed->revision, 9);
  txn_answer_ = R"({"header":{"revision":"10"},"succeeded":true})";
  EXPECT_TRUE(client.Txn({}, {})->succeeded);
  txn_answer_ = R"({"succeeded":"yes"})";
  EXPECT_EQ(client.Txn({}, {}).status().code(), absl::StatusCode::kInternal);
  txn_status_ = 400;
  txn_answer_ =
      R"({"error":"etcdserver: too many operations in txn request","code":3,"message":"etcdserver: too many operations in txn request"})";
  absl::Status refused = client.Txn({}, {}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("too many operations"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("/v3/kv/txn"), std::string::npos) << refused;
}

TEST_F(GatewayAnswersTest, AGoneLeaseIsZeroAndSilenceIsADeadline) {
  EtcdClient client(endpoint_, 300);
  EXPECT_EQ(*client.LeaseKeepAlive(7), 0) << "no TTL in the answer: the lease is gone";
  EXPECT_EQ(client.LeaseGrant(2).status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace rackwise::ledger
