#include "rackwise/ledger_owner.h"

#include <gtest/gtest.h>

#include <string>

namespace rackwise::ledger {
namespace {

TEST(Owner, KindsOfWellFormedOwners) {
  EXPECT_EQ(*ParseOwner("slurm/c1/1234"), OwnerKind::kSlurm);
  EXPECT_EQ(*ParseOwner("k8s/default/0b7f6a1e-uid"), OwnerKind::kK8s);
  EXPECT_EQ(*ParseOwner("maint/burn-in"), OwnerKind::kOther);
  EXPECT_EQ(*ParseOwner("maint/a/b/c"), OwnerKind::kOther);
}

TEST(Owner, RefusesMalformedOwnersWithTheReason) {
  for (const char* bad : {"", "slurm", "slurm/c1", "slurm/c1/1/2", "k8s/ns", "k8s//uid", "slurm/c1/12 34",
                          "/slurm/c1/1", "slurm/c1/1/", "other"}) {
    absl::StatusOr<OwnerKind> kind = ParseOwner(bad);
    EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
  EXPECT_NE(ParseOwner("slurm/c1").status().message().find("slurm/<cluster>/<jobid>"), std::string::npos);
  EXPECT_FALSE(ParseOwner(std::string(600, 'a') + "/b").ok());
  EXPECT_FALSE(ParseOwner("k8s/ns/\x01").ok());
}

TEST(Owner, PrefixesEndWithASlash) {
  EXPECT_TRUE(CheckOwnerPrefix("slurm/c1/").ok());
  EXPECT_TRUE(CheckOwnerPrefix("k8s/").ok());
  for (const char* bad : {"", "/", "slurm/c1", "slurm//", "k8s/ ns/"}) {
    EXPECT_EQ(CheckOwnerPrefix(bad).code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace rackwise::ledger
