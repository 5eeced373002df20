// Admin checks for mutating gRPC calls.
#include "admin_auth.h"

#include <gtest/gtest.h>

namespace rackwise::k8s {
namespace {

TEST(AdminAuth, NoCredentialConfiguredRefusesEveryone) {
  CallerCredentials c;
  c.authorization = "Bearer x";
  EXPECT_EQ(CheckAdmin({}, c).code(), absl::StatusCode::kPermissionDenied);
}

TEST(AdminAuth, BearerToken) {
  AdminAuthConfig cfg;
  cfg.token = "s3cret";
  CallerCredentials c;
  EXPECT_EQ(CheckAdmin(cfg, c).code(), absl::StatusCode::kUnauthenticated);
  c.authorization = "Bearer s3cret";
  EXPECT_TRUE(CheckAdmin(cfg, c).ok());
  c.authorization = "bearer s3cret";
  EXPECT_TRUE(CheckAdmin(cfg, c).ok());
  c.authorization = "Bearer s3cre";
  EXPECT_EQ(CheckAdmin(cfg, c).code(), absl::StatusCode::kPermissionDenied);
  c.authorization = "Basic s3cret";
  EXPECT_FALSE(CheckAdmin(cfg, c).ok());
}

TEST(AdminAuth, ClientCertificates) {
  AdminAuthConfig cfg;
  cfg.client_certs = true;
  CallerCredentials c;
  EXPECT_FALSE(CheckAdmin(cfg, c).ok());
  c.verified_client_cert = true;
  c.common_names = {"ops"};
  EXPECT_TRUE(CheckAdmin(cfg, c).ok());
  cfg.common_names = {"admin"};
  EXPECT_EQ(CheckAdmin(cfg, c).code(), absl::StatusCode::kPermissionDenied);
  c.common_names = {"admin"};
  EXPECT_TRUE(CheckAdmin(cfg, c).ok());
}

TEST(AdminAuth, PlaceholderAndShortTokensAreRefused) {
  EXPECT_TRUE(CheckAdminTokenStrength("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08").ok());
  for (const char* bad :
       {"replace-me-with-openssl-rand-hex-32", "changeme", "s3cret", "0123456789abcdef",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "my-example-admin-credential-for-testing-1"}) {
    absl::Status s = CheckAdminTokenStrength(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("openssl rand -hex 32"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace rackwise::k8s
