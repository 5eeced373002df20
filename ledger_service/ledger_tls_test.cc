// TLS on the ledger's port: certificates made by the test with the openssl CLI (a CA, a server certificate for
// 127.0.0.1, a face's client certificate, and a second CA nobody trusts). A face with the right CA and its own
// certificate reserves; plain gRPC, the wrong CA, or no client certificate on a mutual-TLS port do not.
#include "ledger_tls.h"

#include <gtest/gtest.h>
#include <chrono>
#include <string>

#include "in_process_ledger.h"
#include "ledger_client.h"
#include "test_certs.h"
#include "test_support.h"

namespace rackwise::ledger {
namespace {

class LedgerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(certs_.ok()) << "openssl failed; see " << certs_.dir();
    description_ = testing::LoadDescription(std::string(RACKWISE_LEDGER_TESTDATA) + "/two_racks.yaml");
  }

  std::string File(const std::string& name) const { return certs_.File(name); }
  // The face's certificate is an identity; callers without credentials are anonymous (this test is about TLS).
  static LedgerAccess Access() {
    absl::StatusOr<LedgerAccess> access = LedgerAccess::Parse("identities:\n  - name: face\n    write: [k8s/]\n", "-");
    EXPECT_TRUE(access.ok()) << access.status();
    access->AllowAnonymous();
    return *std::move(access);
  }
  v1::LedgerTls Tls(const std::string& ca, const std::string& cert, const std::string& key) const {
    v1::LedgerTls tls;
    tls.set_ca_file(ca.empty() ? "" : File(ca));
    tls.set_cert_file(cert.empty() ? "" : File(cert));
    tls.set_key_file(key.empty() ? "" : File(key));
    return tls;
  }
  // A Reserve of one GPU through a client with `tls`.
  absl::Status ReserveWith(const std::string& address, const v1::LedgerTls& tls, const std::string& owner) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = LedgerChannelCredentials(tls);
    if (!credentials.ok()) return credentials.status();
    LedgerClient client({address}, std::chrono::milliseconds(500), *credentials);
    return client.Reserve(testing::MakeAllocation(owner, "n1", {0}));
  }

  testing::TestCertificates certs_{{"face"}};
  v1::ClusterDescription description_;
};

TEST_F(LedgerTlsTest, MutualTlsAdmitsOnlyAFaceWithTheRightCaAndItsCertificate) {
  auto server = LedgerServerCredentials(File("server.pem"), File("server.key"), File("ca.pem"));
  ASSERT_TRUE(server.ok()) << server.status();
  testing::InProcessLedger ledger(description_, *server, Access());
  EXPECT_TRUE(ReserveWith(ledger.address(), Tls("ca.pem", "face.pem", "face.key"), "k8s/ns/a").ok());
  EXPECT_FALSE(ReserveWith(ledger.address(), v1::LedgerTls(), "k8s/ns/b").ok()) << "plain gRPC";
  EXPECT_FALSE(ReserveWith(ledger.address(), Tls("other.pem", "face.pem", "face.key"), "k8s/ns/c").ok())
      << "a CA that did not sign the server's certificate";
  EXPECT_FALSE(ReserveWith(ledger.address(), Tls("ca.pem", "", ""), "k8s/ns/d").ok()) << "no client certificate";
  EXPECT_EQ(ledger.store().data.size(), 1u);
}

TEST_F(LedgerTlsTest, ServerTlsWithoutClientCertificates) {
  auto server = LedgerServerCredentials(File("server.pem"), File("server.key"), "");
  ASSERT_TRUE(server.ok()) << server.status();
  testing::InProcessLedger ledger(description_, *server, Access());
  EXPECT_TRUE(ReserveWith(ledger.address(), Tls("ca.pem", "", ""), "k8s/ns/a").ok());
  EXPECT_FALSE(ReserveWith(ledger.address(), v1::LedgerTls(), "k8s/ns/b").ok());
}

TEST_F(LedgerTlsTest, MissingOrWrongFilesAreErrorsNamingThem) {
  absl::Status missing = LedgerChannelCredentials(Tls("nope.pem", "", "")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("nope.pem"), std::string::npos) << missing;
  absl::Status not_pem = LedgerChannelCredentials(Tls("openssl.log", "", "")).status();
  EXPECT_NE(not_pem.message().find("not a PEM file"), std::string::npos) << not_pem;
  EXPECT_FALSE(LedgerServerCredentials(File("server.pem"), File("missing.key"), "").ok());
}

}  // namespace
}  // namespace rackwise::ledger
