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

}  // namespace
}  // namespace rackwise::k8s
