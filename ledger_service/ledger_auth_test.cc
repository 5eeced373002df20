// Who may call the ledger and what each may write (ledger_access.h), through the real gRPC service on a fake
// store: certificates made by openssl at test time (two CAs, test_certs.h) and tokens in files. A face cannot
// touch another face's owners in any verb, an unauthenticated caller gets nothing, a certificate from another
// CA is refused, a token caller is mapped to its prefixes, and every write is audited.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "in_process_ledger.h"
#include "ledger_access.h"
#include "ledger_client.h"
#include "ledger_tls.h"
#include "test_certs.h"
#include "test_support.h"

namespace rackwise::ledger {
namespace {

using std::chrono::milliseconds;

constexpr char kOperatorToken[] = "0f3c9a77d2e14b6a8c5e9d0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a01";
constexpr char kSlurmToken[] = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d";

class LedgerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(certs_.ok()) << "openssl failed; see " << certs_.dir();
    description_ = testing::LoadDescription(testing::SharedRacks());
    std::ofstream(certs_.File("operator.token")) << kOperatorToken << "\n";
    std::ofstream(certs_.File("slurm.token")) << kSlurmToken << "\n";
    std::ofstream(certs_.File("access.yaml")) << AccessYaml();
    absl::StatusOr<LedgerAccess> access = LedgerAccess::Load(certs_.File("access.yaml"));
    ASSERT_TRUE(access.ok()) << access.status();
    auto server = LedgerServerCredentials(certs_.File("server.pem"), certs_.File("server.key"), certs_.File("ca.pem"));
    ASSERT_TRUE(server.ok()) << server.status();
    ledger_ = std::make_unique<testing::InProcessLedger>(description_, *server, *std::move(access));
  }

  std::string AccessYaml() const {
    return "identities:\n"
           "  - name: slurmctld-c1\n    write: [slurm/c1/]\n    token_file: " +
           certs_.File("slurm.token") +
           "\n"
           "  - name: k8s-extender\n    write: [k8s/]\n    cert_names: [k8s-extender.clients.test]\n"
           "  - name: operator\n    write: [k8s/_operator/, slurm/]\n    token_file: " +
           certs_.File("operator.token") + "\n";
  }

  // A client presenting `cert` (signed by `ca` unless it is "stranger") and/or `token`; "" for none.
  // `deadline`: short for a client whose handshake fails (it retries until the deadline, then fails all the same).
  LedgerClient Client(const std::string& cert, const std::string& token = "",
                      milliseconds deadline = milliseconds(2000)) const {
    v1::LedgerTls tls;
    tls.set_ca_file(certs_.File("ca.pem"));
    if (!cert.empty()) {
      tls.set_cert_file(certs_.File(cert + ".pem"));
      tls.set_key_file(certs_.File(cert + ".key"));
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = LedgerChannelCredentials(tls);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return LedgerClient({ledger_->address()}, deadline, *credentials, token);
  }

  testing::TestCertificates certs_{{"slurmctld-c1", "k8s-extender", "nobody"}};
  v1::ClusterDescription description_;
  std::unique_ptr<testing::InProcessLedger> ledger_;
};

void ExpectDenied(const absl::Status& s, const std::string& identity, const std::string& owner) {
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("'" + identity + "'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'" + owner + "'"), std::string::npos) << s;
}

TEST_F(LedgerAuthTest, AFaceCannotTouchAnotherFacesOwnersInAnyVerb) {
  LedgerClient slurm = Client("slurmctld-c1"), k8s = Client("k8s-extender");
  ASSERT_TRUE(slurm.Reserve(testing::MakeAllocation("slurm/c1/42", "n1", {0, 1, 2, 3})).ok());
  ASSERT_TRUE(k8s.Reserve(testing::MakeAllocation("k8s/ns/pod", "n5", {0})).ok());

  ExpectDenied(k8s.Reserve(testing::MakeAllocation("slurm/c1/43", "n2", {0})), "k8s-extender", "slurm/c1/43");
  ExpectDenied(k8s.Release("slurm/c1/42").status(), "k8s-extender", "slurm/c1/42");
  ExpectDenied(k8s.Reconcile("slurm/", {}).status(), "k8s-extender", "slurm/");
  ExpectDenied(slurm.Reserve(testing::MakeAllocation("k8s/ns/other", "n6", {0})), "slurmctld-c1", "k8s/ns/other");
  ExpectDenied(slurm.Release("k8s/ns/pod").status(), "slurmctld-c1", "k8s/ns/pod");
  ExpectDenied(slurm.Reconcile("k8s/", {}).status(), "slurmctld-c1", "k8s/");
  // A prefix wider than the caller's own: Reconcile("slurm/") would release every other cluster's jobs too.
  ExpectDenied(slurm.Reconcile("slurm/", {}).status(), "slurmctld-c1", "slurm/");
  EXPECT_EQ(testing::StoredOwners(*ledger_), (std::vector<std::string>{"k8s/ns/pod", "slurm/c1/42"}));

  // Reads are wider: each face sees every owner (it mirrors their draw).
  absl::StatusOr<std::vector<v1::Allocation>> seen = k8s.List("");
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->size(), 2u);
  // Within its own prefix every verb works.
  EXPECT_TRUE(slurm.Reconcile("slurm/c1/", {}).ok());
  EXPECT_TRUE(k8s.Release("k8s/ns/pod").ok());
  EXPECT_TRUE(testing::StoredOwners(*ledger_).empty());
  EXPECT_EQ(ledger_->audit().Count("k8s-extender", "Reconcile", "denied"), 1u);
  EXPECT_EQ(ledger_->audit().Count("slurmctld-c1", "Reconcile", "denied"), 2u);
  EXPECT_EQ(ledger_->audit().Count("slurmctld-c1", "Reserve", "accepted"), 1u);
  EXPECT_NE(ledger_->audit().MetricsText().find(
                "rackwise_ledger_audit_total{identity=\"k8s-extender\",verb=\"Release\",outcome=\"denied\"} 1\n"),
            std::string::npos)
      << ledger_->audit().MetricsText();
}

TEST_F(LedgerAuthTest, AnUnauthenticatedCallerGetsNothing) {
  ASSERT_TRUE(Client("slurmctld-c1").Reserve(testing::MakeAllocation("slurm/c1/42", "n1", {0})).ok());
  // TLS with the right CA, but no client certificate: the handshake itself fails.
  LedgerClient anonymous = Client("", "", milliseconds(300));
  EXPECT_FALSE(anonymous.Release("slurm/c1/42").ok());
  EXPECT_FALSE(anonymous.List("").ok());
  EXPECT_FALSE(anonymous.Status().ok());
  // A certificate of the trusted CA whose names are no identity.
  LedgerClient nobody = Client("nobody");
  EXPECT_EQ(nobody.Release("slurm/c1/42").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(nobody.List("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(nobody.Status().status().code(), absl::StatusCode::kUnauthenticated);
  // A wrong token on a certificate that is an identity: refused, not taken as the certificate's identity.
  EXPECT_EQ(Client("slurmctld-c1", std::string(64, 'a')).Release("slurm/c1/42").status().code(),
            absl::StatusCode::kUnauthenticated);
  // The right token of one identity on another identity's certificate.
  EXPECT_EQ(Client("k8s-extender", kSlurmToken).Release("slurm/c1/42").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(testing::StoredOwners(*ledger_), (std::vector<std::string>{"slurm/c1/42"}));
  EXPECT_EQ(ledger_->audit().Count(kNoIdentity, "Release", "unauthenticated"), 3u);
}

TEST_F(LedgerAuthTest, ACertificateFromAnotherCaIsRefused) {
  // CN slurmctld-c1, as the real face's, but signed by a CA the ledger does not trust.
  LedgerClient stranger = Client("stranger", "", milliseconds(300));
  EXPECT_FALSE(stranger.Reserve(testing::MakeAllocation("slurm/c1/1", "n1", {0})).ok());
  EXPECT_FALSE(stranger.List("").ok());
  EXPECT_TRUE(testing::StoredOwners(*ledger_).empty());
}

TEST_F(LedgerAuthTest, ATokenCallerIsMappedToItsPrefixes) {
  // The operator's token, over a certificate that is no identity's (the token names the caller).
  LedgerClient op = Client("nobody", kOperatorToken);
  absl::StatusOr<v1::StatusResponse> status = op.Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->caller_identity(), "operator");
  EXPECT_FALSE(status->insecure_loopback());
  EXPECT_TRUE(op.Reserve(testing::MakeAllocation("k8s/_operator/maint", "n5", {0})).ok());
  EXPECT_TRUE(op.Reserve(testing::MakeAllocation("slurm/c1/999", "n1", {0})).ok());
  EXPECT_TRUE(op.Release("slurm/c1/999").ok());
  ExpectDenied(op.Reserve(testing::MakeAllocation("k8s/ns/pod", "n6", {0})), "operator", "k8s/ns/pod");
  EXPECT_EQ(testing::StoredOwners(*ledger_), (std::vector<std::string>{"k8s/_operator/maint"}));
  EXPECT_EQ(ledger_->audit().Count("operator", "Reserve", "accepted"), 2u);
  EXPECT_EQ(ledger_->audit().Count("operator", "Reserve", "denied"), 1u);
}

// A plain port: a token is the only credential; without one nothing is answered.
TEST_F(LedgerAuthTest, PlainPortTakesTokensOnly) {
  absl::StatusOr<LedgerAccess> access = LedgerAccess::Load(certs_.File("access.yaml"));
  ASSERT_TRUE(access.ok()) << access.status();
  testing::InProcessLedger plain(description_, nullptr, *std::move(access));
  LedgerClient slurm({plain.address()}, milliseconds(2000), nullptr, kSlurmToken);
  LedgerClient anonymous({plain.address()}, milliseconds(2000));
  EXPECT_TRUE(slurm.Reserve(testing::MakeAllocation("slurm/c1/42", "n1", {0, 1, 2, 3, 4, 5, 6, 7})).ok());
  EXPECT_EQ(anonymous.Release("slurm/c1/42").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous.Reconcile("slurm/", {}).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous.List("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous.Status().status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(testing::StoredOwners(plain), (std::vector<std::string>{"slurm/c1/42"}));
}

TEST_F(LedgerAuthTest, InsecureLoopbackSaysSoAndStillMapsCredentials) {
  absl::StatusOr<LedgerAccess> access = LedgerAccess::Load(certs_.File("access.yaml"));
  ASSERT_TRUE(access.ok()) << access.status();
  access->AllowAnonymous();
  testing::InProcessLedger insecure(description_, nullptr, *std::move(access));
  LedgerClient anonymous({insecure.address()}, milliseconds(2000));
  absl::StatusOr<v1::StatusResponse> status = anonymous.Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->insecure_loopback());
  EXPECT_EQ(status->caller_identity(), "anonymous");
  EXPECT_TRUE(anonymous.Reserve(testing::MakeAllocation("k8s/ns/a", "n5", {0})).ok());
  // A token still names its identity, with its prefixes.
  LedgerClient slurm({insecure.address()}, milliseconds(2000), nullptr, kSlurmToken);
  ExpectDenied(slurm.Release("k8s/ns/a").status(), "slurmctld-c1", "k8s/ns/a");
}

class AccessFileTest : public ::testing::Test {
 protected:
  absl::Status Parse(const std::string& yaml) { return LedgerAccess::Parse(yaml, "access.yaml").status(); }
  std::string TokenFile(const std::string& name, const std::string& token) {
    const std::string path = certs_.File(name);
    std::ofstream(path) << token << "\n";
    return path;
  }
  testing::TestCertificates certs_{{}};
};

TEST_F(AccessFileTest, MistakesAreRefusedWithTheirLine) {
  const std::string good = TokenFile("good", kSlurmToken), short_token = TokenFile("short", "abc123");
  EXPECT_TRUE(Parse("identities:\n  - name: a\n    write: [k8s/]\n").ok());
  EXPECT_NE(Parse("identities:\n  - name: a\n    writes: [k8s/]\n").message().find("access.yaml:3: unknown key"),
            std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: a\n    write: [k8s]\n").message().find("write:"), std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: a\n  - name: a\n").message().find("listed twice"), std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: 'a b'\n").message().find("identity name"), std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: a\n    token_file: " + short_token + "\n").message().find("at least 32"),
            std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: a\n    token_file: " + good + "\n  - name: b\n    token_file: " + good + "\n")
                .message()
                .find("the token of another identity"),
            std::string::npos);
  EXPECT_NE(Parse("identities:\n  - name: a\n    cert_names: [x]\n  - name: b\n    cert_names: [x]\n")
                .message()
                .find("two identities"),
            std::string::npos);
  EXPECT_NE(Parse("identities: []\n").message().find("non-empty"), std::string::npos);
  EXPECT_NE(Parse("identities: [\n").message().find("access.yaml:"), std::string::npos);
}

}  // namespace
}  // namespace rackwise::ledger
