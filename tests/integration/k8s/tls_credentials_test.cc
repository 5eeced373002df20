// TLS credentials end to end, with a throwaway PKI made by the openssl command for each run:
// - the extender's HTTPS face: kube-scheduler verifies its certificate, and with --client-ca only callers
//   presenting a certificate signed by that CA are served;
// - the gRPC port: client certificates signed by the admin CA (and with an admin common name) may change
//   state; readers need no certificate; a certificate from another CA never completes the handshake;
// - the API-server client: a kubeconfig with client-certificate[-data]/client-key[-data] and
//   certificate-authority[-data] authenticates to a server that demands client certificates, and fails
//   cleanly without one or against a server its CA does not vouch for.
#include <cstdlib>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "extender_fixture.h"
#include "grpc_service.h"
#include "kube_client.h"
#include "kube_config.h"
#include "rackwise/testing/fake_api_server.h"

namespace rackwise::k8s::testing {
namespace {

namespace fs = std::filesystem;

// A CA, a server certificate for localhost/127.0.0.1, client certificates with given common names, and a
// second ("rogue") CA with its own client certificate. Files live in a fresh temporary directory.
class TestPki {
 public:
  TestPki() {
    dir_ = fs::temp_directory_path() / absl::StrCat("rackwise-pki-", ::getpid(), "-", counter_++);
    fs::create_directories(dir_);
    ok_ = MakeCa("ca") && MakeCa("rogue-ca") && MakeCert("server", "ca", "localhost", true) &&
          MakeCert("admin", "ca", "ops-admin", false) && MakeCert("reader", "ca", "someone", false) &&
          MakeCert("rogue", "rogue-ca", "ops-admin", false);
  }
  ~TestPki() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool ok() const { return ok_; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Pem(const std::string& name) const {
    absl::StatusOr<std::string> s = ReadFile(Path(name));
    return s.ok() ? *s : "";
  }

 private:
  bool Run(const std::string& cmd) const {
    return std::system(absl::StrCat("cd '", dir_.string(), "' && (", cmd, ") >/dev/null 2>&1").c_str()) == 0;
  }
  bool MakeCa(const std::string& name) const {
    return Run(absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj '/CN=", name,
        "' -keyout ", name, ".key -out ", name, ".crt"));
  }
  bool MakeCert(const std::string& name, const std::string& ca, const std::string& cn, bool server) const {
    const std::string ext = server ? "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                                   : "extendedKeyUsage=clientAuth\n";
    return Run(
        absl::StrCat("printf '", ext, "' > ", name,
                     ".ext && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=", cn,
                     "' -keyout ", name, ".key -out ", name, ".csr && openssl x509 -req -in ", name, ".csr -CA ", ca,
                     ".crt -CAkey ", ca, ".key -CAcreateserial -days 2 -extfile ", name, ".ext -out ", name, ".crt"));
  }
  static inline int counter_ = 0;
  fs::path dir_;
  bool ok_ = false;
};

class HttpsTest : public ExtenderHttpFixture {
 protected:
  TestPki pki_;
};

TEST_F(HttpsTest, VerifiedServerAndRequiredClientCertificates) {
  ASSERT_TRUE(pki_.ok()) << "the openssl command could not make the test PKI";
  HttpServerOptions http;
  http.cert_file = pki_.Path("server.crt");
  http.key_file = pki_.Path("server.key");
  http.client_ca_file = pki_.Path("ca.crt");
  StartExtender(true, nullptr, http);
  ASSERT_TRUE(server_->https());
  const std::string body = ReadTestData("filter_args_lowercase.json");
  {
    httplib::SSLClient scheduler("localhost", server_->port(), pki_.Path("admin.crt"), pki_.Path("admin.key"));
    scheduler.set_ca_cert_path(pki_.Path("ca.crt"));
    scheduler.enable_server_certificate_verification(true);
    auto res = scheduler.Post("/filter", body, "application/json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_TRUE(Json::parse(res->body).contains("NodeNames"));
  }
  {
    httplib::SSLClient anonymous("localhost", server_->port());
    anonymous.set_ca_cert_path(pki_.Path("ca.crt"));
    anonymous.enable_server_certificate_verification(true);
    EXPECT_FALSE(anonymous.Post("/filter", body, "application/json"));
  }
  {
    httplib::SSLClient rogue("localhost", server_->port(), pki_.Path("rogue.crt"), pki_.Path("rogue.key"));
    rogue.set_ca_cert_path(pki_.Path("ca.crt"));
    rogue.enable_server_certificate_verification(true);
    EXPECT_FALSE(rogue.Post("/filter", body, "application/json"));
  }
  {
    // A client that trusts another CA refuses the extender's certificate.
    httplib::SSLClient wary("localhost", server_->port(), pki_.Path("admin.crt"), pki_.Path("admin.key"));
    wary.set_ca_cert_path(pki_.Path("rogue-ca.crt"));
    wary.enable_server_certificate_verification(true);
    EXPECT_FALSE(wary.Post("/filter", body, "application/json"));
  }
  // Plain HTTP to the TLS port gets nothing useful.
  auto plain = client_->Get("/healthz");
  EXPECT_TRUE(!plain || plain->status != 200);
}

class GrpcTlsTest : public ExtenderHttpFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.ok()) << "the openssl command could not make the test PKI";
    StartExtender();
    AdminAuthConfig auth;
    auth.client_certs = true;
    auth.common_names = {"ops-admin"};
    GrpcServerOptions options;
    options.cert_file = pki_.Path("server.crt");
    options.key_file = pki_.Path("server.key");
    options.admin_ca_file = pki_.Path("ca.crt");
    grpc_ = std::make_unique<GrpcServer>(service_.get(), auth, options);
    ASSERT_TRUE(grpc_->Start().ok());
  }
  void TearDown() override {
    grpc_->Stop();
    ExtenderHttpFixture::TearDown();
  }
  // A stub over TLS that trusts the test CA, presenting `client` ("" for no client certificate).
  std::unique_ptr<v1::Placement::Stub> Stub(const std::string& client) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pki_.Pem("ca.crt");
    if (!client.empty()) {
      ssl.pem_cert_chain = pki_.Pem(client + ".crt");
      ssl.pem_private_key = pki_.Pem(client + ".key");
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return v1::Placement::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", grpc_->port()), grpc::SslCredentials(ssl), args));
  }
  static grpc::Status SetCap(v1::Placement::Stub& stub, double kw) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::SetPowerCapRequest req;
    req.set_name("b0-r0000");
    req.set_power_cap_kw(kw);
    v1::SetPowerCapResponse resp;
    return stub.SetPowerCap(&ctx, req, &resp);
  }
  Milliwatts RackCap() const {
    return service_->WithLedger([](const Ledger& l) { return l.rack_cap(0); });
  }

  TestPki pki_;
  std::unique_ptr<GrpcServer> grpc_;
};

TEST_F(GrpcTlsTest, AdminClientCertificateMayChangeCapsOthersMayOnlyRead) {
  const Milliwatts before = RackCap();
  // No client certificate: reads work, changes are refused as unauthenticated.
  auto anonymous = Stub("");
  {
    grpc::ClientContext ctx;
    v1::ClusterStateResponse state;
    ASSERT_TRUE(anonymous->ClusterState(&ctx, v1::ClusterStateRequest(), &state).ok());
    EXPECT_EQ(state.cluster(), "k8s-test");
  }
  EXPECT_EQ(SetCap(*anonymous, 25).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A certificate from the admin CA but not an admin's common name.
  auto reader = Stub("reader");
  grpc::Status denied = SetCap(*reader, 25);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED) << denied.error_message();
  EXPECT_EQ(RackCap(), before);
  // The admin's certificate.
  auto admin = Stub("admin");
  grpc::Status ok = SetCap(*admin, 25);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(RackCap(), WattsToMilliwatts(25'000));
  // The admin's common name, signed by another CA: the handshake fails, nothing changes.
  auto rogue = Stub("rogue");
  grpc::Status refused = SetCap(*rogue, 40);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(RackCap(), WattsToMilliwatts(25'000));
}

std::string WriteKubeconfig(const TestPki& pki, const std::string& name, int port, const std::string& user_yaml,
                            const std::string& cluster_ca_yaml) {
  const std::string path = pki.Path(name);
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
      << "clusters:\n- name: test\n  cluster:\n    server: https://localhost:" << port << "\n"
      << cluster_ca_yaml << "contexts:\n- name: test\n  context:\n    cluster: test\n    user: u\n"
      << "users:\n- name: u\n  user:\n"
      << user_yaml;
  return path;
}

TEST(KubeconfigTls, ClientCertificatesFromFilesAndFromData) {
  TestPki pki;
  ASSERT_TRUE(pki.ok()) << "the openssl command could not make the test PKI";
  // The fake API server over HTTPS, demanding client certificates signed by the test CA.
  rackwise::testing::FakeApiServer api({.tls = rackwise::testing::FakeApiServer::Tls{
                                            pki.Path("server.crt"), pki.Path("server.key"), pki.Path("ca.crt")}});
  ASSERT_TRUE(api.Start().ok());
  const std::string served_version = std::to_string(api.resource_version());
  auto list = [&](const std::string& kubeconfig) -> absl::Status {
    absl::StatusOr<KubeConfig> config = LoadKubeconfig(kubeconfig);
    if (!config.ok()) return config.status();
    absl::StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create(*config);
    if (!client.ok()) return client.status();
    absl::StatusOr<ListPage> page = (*client)->List("/api/v1/pods", "", 10, "");
    if (!page.ok()) return page.status();
    return page->resource_version == served_version ? absl::OkStatus() : absl::InternalError("wrong list");
  };
  const std::string ca_file = "    certificate-authority: ca.crt\n";  // relative to the kubeconfig's directory
  const std::string ca_data =
      absl::StrCat("    certificate-authority-data: ", absl::Base64Escape(pki.Pem("ca.crt")), "\n");

  absl::Status files = list(WriteKubeconfig(pki, "files.kubeconfig", api.port(),
                                            "    client-certificate: admin.crt\n    client-key: admin.key\n", ca_file));
  EXPECT_TRUE(files.ok()) << files;
  absl::Status data =
      list(WriteKubeconfig(pki, "data.kubeconfig", api.port(),
                           absl::StrCat("    client-certificate-data: ", absl::Base64Escape(pki.Pem("reader.crt")),
                                        "\n    client-key-data: ", absl::Base64Escape(pki.Pem("reader.key")), "\n"),
                           ca_data));
  EXPECT_TRUE(data.ok()) << data;

  // No client certificate: the server ends the handshake; the client says so instead of hanging or crashing.
  absl::Status anonymous = list(WriteKubeconfig(pki, "token.kubeconfig", api.port(), "    token: abc\n", ca_file));
  EXPECT_FALSE(anonymous.ok());
  // A client certificate from another CA.
  absl::Status rogue = list(WriteKubeconfig(pki, "rogue.kubeconfig", api.port(),
                                            "    client-certificate: rogue.crt\n    client-key: rogue.key\n", ca_file));
  EXPECT_FALSE(rogue.ok());
  // The server's certificate is not vouched for by the CA the kubeconfig trusts.
  absl::Status untrusted = list(WriteKubeconfig(pki, "untrusted.kubeconfig", api.port(),
                                                "    client-certificate: admin.crt\n    client-key: admin.key\n",
                                                "    certificate-authority: rogue-ca.crt\n"));
  EXPECT_FALSE(untrusted.ok());
  // A key that does not belong to the certificate is a clear configuration error.
  absl::Status mismatched =
      list(WriteKubeconfig(pki, "mismatch.kubeconfig", api.port(),
                           "    client-certificate: admin.crt\n    client-key: reader.key\n", ca_file));
  EXPECT_FALSE(mismatched.ok());
}

}  // namespace
}  // namespace rackwise::k8s::testing
