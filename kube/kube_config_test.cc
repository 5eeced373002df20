// Kubeconfig and in-cluster credential loading.
#include "kube_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace rackwise::k8s {
namespace {

std::string TempDir() {
  std::string t = ::testing::TempDir() + "kcfg-" + std::to_string(::getpid());
  std::filesystem::create_directories(t);
  return t;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(KubeConfig, ServerUrls) {
  KubeConfig c;
  ASSERT_TRUE(ParseServerUrl("https://10.0.0.1:6443", &c).ok());
  EXPECT_TRUE(c.https);
  EXPECT_EQ(c.host, "10.0.0.1");
  EXPECT_EQ(c.port, 6443);
  ASSERT_TRUE(ParseServerUrl("http://[::1]:8080/prefix/", &c).ok());
  EXPECT_FALSE(c.https);
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.base_path, "/prefix");
  ASSERT_TRUE(ParseServerUrl("https://api.example", &c).ok());
  EXPECT_EQ(c.port, 443);
  EXPECT_FALSE(ParseServerUrl("ftp://x", &c).ok());
  EXPECT_FALSE(ParseServerUrl("https://h:99999", &c).ok());
}

TEST(KubeConfig, LoadsCurrentContextWithTokenAndCaData) {
  std::string dir = TempDir();
  Write(dir + "/token", "tok-from-file\n");
  Write(dir + "/config", R"(apiVersion: v1
kind: Config
current-context: b
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTg==
contexts:
- name: a
  context: {cluster: nope, user: u1}
- name: b
  context: {cluster: c1, user: u1}
users:
- name: u1
  user:
    tokenFile: token
)");
  auto c = LoadKubeconfig(dir + "/config");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "127.0.0.1");
  EXPECT_EQ(c->port, 6443);
  EXPECT_EQ(c->ca_pem, "-----BEGIN");
  EXPECT_EQ(c->CurrentToken(), "tok-from-file");
}

TEST(KubeConfig, ExecPluginsAreRefusedClearly) {
  std::string dir = TempDir();
  Write(dir + "/exec", R"(current-context: x
clusters: [{name: c, cluster: {server: "https://h:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
users: [{name: u, user: {exec: {command: aws}}}]
)");
  auto c = LoadKubeconfig(dir + "/exec");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("exec"), std::string::npos);
  Write(dir + "/bad", "current-context: [\n");
  EXPECT_FALSE(LoadKubeconfig(dir + "/bad").ok());
  EXPECT_FALSE(LoadKubeconfig(dir + "/missing").ok());
}

TEST(KubeConfig, InClusterNeedsEnvironmentAndToken) {
  std::string dir = TempDir() + "/sa";
  std::filesystem::create_directories(dir);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  auto none = InClusterConfig(dir);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  Write(dir + "/token", "sa-token");
  Write(dir + "/ca.crt", "PEM");
  auto c = InClusterConfig(dir);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->host, "10.96.0.1");
  EXPECT_EQ((*c)->CurrentToken(), "sa-token");
  EXPECT_EQ((*c)->ca_pem, "PEM");
}

}  // namespace
}  // namespace rackwise::k8s
