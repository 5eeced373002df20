// The ledger's own security against a real etcd: etcd over TLS with client certificates (made by openssl at
// test time, two CAs), and real replicas that check their callers (an access file with tokens) and audit
// every write in their log and on /metrics. Also the flags a replica refuses to start with.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <regex>
#include <string>

#include "etcd_test_fixture.h"
#include "in_process_ledger.h"
#include "test_certs.h"
#include "test_support.h"

namespace rackwise::ledger::testing {
namespace {

constexpr char kK8sToken[] = "3b1f5d7e9a2c4e6f8a0b2d4f6e8c0a1b3d5f7e9a2c4b6d8f0e1a3c5b7d9f2e4a";
constexpr char kSlurmToken[] = "c4e6a8f0b2d4e6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6";

bool HaveEtcd() { return ::access(kEtcd, X_OK) == 0; }

TEST(EtcdEndpointTest, PlainHttpOnlyOnLoopbackAndHttpsNeedsItsCa) {
  EXPECT_TRUE(CheckEtcdEndpoint("http://127.0.0.1:2379", {}).ok());
  EXPECT_TRUE(CheckEtcdEndpoint("http://localhost:2379/", {}).ok());
  EXPECT_TRUE(CheckEtcdEndpoint("http://[::1]:2379", {}).ok());
  absl::Status remote = CheckEtcdEndpoint("http://10.0.0.5:2379", {});
  EXPECT_EQ(remote.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(remote.message().find("only to an etcd on loopback"), std::string::npos) << remote;
  EXPECT_FALSE(CheckEtcdEndpoint("http://127.0.0.1.example.org:2379", {}).ok());
  EXPECT_NE(CheckEtcdEndpoint("https://10.0.0.5:2379", {}).message().find("--etcd-cacert"), std::string::npos);
  EXPECT_FALSE(CheckEtcdEndpoint("https://10.0.0.5:2379", {.ca_file = "/nonexistent/ca.pem"}).ok());
  EXPECT_FALSE(CheckEtcdEndpoint("http://127.0.0.1:2379", {.ca_file = "/etc/hostname"}).ok()) << "TLS files on http";
  EXPECT_FALSE(CheckEtcdEndpoint("etcd:2379", {}).ok());
}

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveEtcd()) GTEST_SKIP() << kEtcd << " is missing";
    ASSERT_TRUE(certs_.ok()) << "openssl failed; see " << certs_.dir();
    tls_ = {.cert_file = certs_.File("server.pem"),
            .key_file = certs_.File("server.key"),
            .client_ca_file = certs_.File("ca.pem"),
            .client = Good()};
    ASSERT_EQ(etcd_.Start(&tls_), "");
  }
  void TearDown() override { etcd_.Stop(); }

  EtcdTls Good() const {
    return {.ca_file = certs_.File("ca.pem"),
            .cert_file = certs_.File("rackwise-ledger.pem"),
            .key_file = certs_.File("rackwise-ledger.key")};
  }

  TestCertificates certs_{{"rackwise-ledger"}};
  EtcdServerTls tls_;
  Etcd etcd_;
};

TEST_F(EtcdTlsTest, TheClientVerifiesEtcdAndPresentsItsCertificate) {
  EtcdClient good(etcd_.endpoint(), 2000, Good());
  ASSERT_TRUE(good.Health().ok()) << good.Health();
  const EtcdWrite put{.key = "/t/k", .value = "v"};
  ASSERT_TRUE(good.Txn({}, {&put, 1}).ok());
  absl::StatusOr<std::vector<EtcdKeyValue>> read = good.Get("/t/k");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].value, "v");

  EtcdTls wrong_ca = Good();
  wrong_ca.ca_file = certs_.File("other.pem");
  absl::Status s = EtcdClient(etcd_.endpoint(), 2000, wrong_ca).Health();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << "a server the CA did not sign: " << s;
  EtcdTls no_cert{.ca_file = certs_.File("ca.pem")};
  EXPECT_FALSE(EtcdClient(etcd_.endpoint(), 2000, no_cert).Health().ok()) << "etcd asks for a client certificate";
  EtcdTls stranger{.ca_file = certs_.File("ca.pem"),
                   .cert_file = certs_.File("stranger.pem"),
                   .key_file = certs_.File("stranger.key")};
  EXPECT_FALSE(EtcdClient(etcd_.endpoint(), 2000, stranger).Health().ok()) << "a client certificate of another CA";
}

// Real replicas over a TLS etcd, their callers checked against an access file with tokens.
class LedgerAuthEtcdTest : public LedgerEtcdTest {
 protected:
  void SetUp() override {
    LedgerEtcdTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(certs_.ok()) << "openssl failed; see " << certs_.dir();
    const EtcdTls client{.ca_file = certs_.File("ca.pem"),
                         .cert_file = certs_.File("rackwise-ledger.pem"),
                         .key_file = certs_.File("rackwise-ledger.key")};
    tls_ = {.cert_file = certs_.File("server.pem"),
            .key_file = certs_.File("server.key"),
            .client_ca_file = certs_.File("ca.pem"),
            .client = client};
    ASSERT_EQ(tls_etcd_.Start(&tls_), "");
    std::ofstream(certs_.File("k8s.token")) << kK8sToken << "\n";
    std::ofstream(certs_.File("slurm.token")) << kSlurmToken << "\n";
    std::ofstream(certs_.File("access.yaml"))
        << "identities:\n  - name: k8s-extender\n    write: [k8s/]\n    token_file: " << certs_.File("k8s.token")
        << "\n  - name: slurmctld-c1\n    write: [slurm/c1/]\n    token_file: " << certs_.File("slurm.token") << "\n";
    replica_etcd_ = &tls_etcd_;
    replica_flags_ = {"--etcd-cacert",    client.ca_file,  "--etcd-cert",   client.cert_file,
                      "--etcd-key",       client.key_file, "--access-file", certs_.File("access.yaml"),
                      "--metrics-listen", "127.0.0.1:0"};
    token_ = kK8sToken;
  }
  void TearDown() override { tls_etcd_.Stop(); }

  // GET /metrics of `r` (its port is in its log).
  std::string Metrics(Replica& r) {
    std::smatch port;
    const std::string log = r.process->Log();
    if (!std::regex_search(log, port, std::regex("metrics on port ([0-9]+)"))) return "no metrics port in the log";
    httplib::Client http("127.0.0.1", std::stoi(port[1]));
    auto res = http.Get("/metrics");
    return res && res->status == 200 ? res->body : "GET /metrics failed";
  }

  TestCertificates certs_{{"rackwise-ledger"}};
  EtcdServerTls tls_;
  Etcd tls_etcd_;
};

TEST_F(LedgerAuthEtcdTest, ReplicasOverTlsEtcdMapTokensToPrefixesAndAuditEveryWrite) {
  Replica* a = StartReplica("a", SharedRacks());
  ASSERT_EQ(WaitForLeader({a}), a);
  LedgerClient k8s = ClientOf({a});
  LedgerClient slurm({a->address}, milliseconds(10000), nullptr, kSlurmToken);
  LedgerClient anonymous({a->address}, milliseconds(10000));
  ASSERT_TRUE(k8s.Reserve(MakeAllocation("k8s/ns/a", "n5", {0})).ok());
  ASSERT_TRUE(slurm.Reserve(MakeAllocation("slurm/c1/42", "n1", {0, 1, 2, 3})).ok());
  EXPECT_EQ(k8s.Reconcile("slurm/", {}).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(slurm.Release("k8s/ns/a").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(anonymous.Release("slurm/c1/42").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous.List("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Owners(k8s), (std::set<std::string>{"k8s/ns/a", "slurm/c1/42"}));
  // Both writes reached etcd over TLS.
  absl::StatusOr<std::vector<EtcdKeyValue>> stored = tls_etcd_.client().GetPrefix(KeysOfLedger(name_).alloc_prefix);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->size(), 2u);

  const std::string metrics = Metrics(*a);
  for (const char* line :
       {"rackwise_ledger_audit_total{identity=\"k8s-extender\",verb=\"Reserve\",outcome=\"accepted\"} 1\n",
        "rackwise_ledger_audit_total{identity=\"k8s-extender\",verb=\"Reconcile\",outcome=\"denied\"} 1\n",
        "rackwise_ledger_audit_total{identity=\"slurmctld-c1\",verb=\"Release\",outcome=\"denied\"} 1\n",
        "rackwise_ledger_audit_total{identity=\"none\",verb=\"Release\",outcome=\"unauthenticated\"} 1\n",
        "rackwise_ledger_insecure_loopback 0\n", "rackwise_ledger_serving 1\n"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << " in:\n" << metrics;
  const std::string log = a->process->Log();
  EXPECT_NE(log.find("audit: slurmctld-c1 Reserve slurm/c1/42: accepted"), std::string::npos) << log;
  EXPECT_NE(log.find("audit: k8s-extender Reconcile slurm/: denied"), std::string::npos) << log;
  EXPECT_NE(log.find("audit: none Release slurm/c1/42: unauthenticated"), std::string::npos) << log;
}

// Runs `command`; its exit status and what it printed (stdout and stderr).
std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "cannot run " + command};
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  return {::pclose(pipe), out};
}

// `rackwise status --ledger` against a replica that checks its callers: refused without a token, answered with one.
TEST_F(LedgerAuthEtcdTest, StatusCommandPresentsItsToken) {
  Replica* a = StartReplica("a", SharedRacks());
  ASSERT_EQ(WaitForLeader({a}), a);
  const std::string status = absl::StrCat(RACKWISE_CLI_BINARY, " status --json --ledger ", a->address);
  const auto [refused, why] = RunCommand(status);
  EXPECT_NE(refused, 0) << why;
  EXPECT_NE(why.find("no credentials"), std::string::npos) << why;  // the ledger's own words
  const auto [ok, out] = RunCommand(absl::StrCat(status, " --ledger-token-file ", certs_.File("k8s.token")));
  EXPECT_EQ(ok, 0) << out;
  EXPECT_NE(out.find("\"leader_id\""), std::string::npos) << out;
}

// Starts rackwise-ledger with `flags` and waits for it to exit; its log.
std::string RefusedStart(const std::string& dir, const std::vector<std::string>& flags) {
  ChildProcess ledger("refused", dir + "/refused.log");
  std::vector<std::string> argv = {RACKWISE_LEDGER_BINARY, "--cluster", TwoRacks(), "--name", "refused",
                                   "--replica-id",         "a"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  EXPECT_TRUE(ledger.Spawn(argv));
  EXPECT_EQ(WaitFor(
                "the replica to exit", [&] { return !ledger.Running(); }, {}, milliseconds(30000)),
            "");
  return ledger.Log();
}

TEST(LedgerFlagsTest, InsecureOrIncompleteSettingsAreRefusedAtStart) {
  TestCertificates dir{{}};
  ASSERT_TRUE(dir.ok());
  EXPECT_NE(RefusedStart(dir.dir(), {"--etcd", "http://192.0.2.1:2379", "--insecure-loopback"})
                .find("plain http:// only to an etcd on loopback"),
            std::string::npos);
  EXPECT_NE(RefusedStart(dir.dir(), {"--etcd", "http://127.0.0.1:1", "--listen", "0.0.0.0:0", "--insecure-loopback"})
                .find("is not a loopback address"),
            std::string::npos);
  EXPECT_NE(RefusedStart(dir.dir(), {"--etcd", "http://127.0.0.1:1"}).find("--access-file is required"),
            std::string::npos);
}

}  // namespace
}  // namespace rackwise::ledger::testing
