#include "gpu_device_id.h"

#include <gtest/gtest.h>

namespace rackwise::node_agent {
namespace {

TEST(ParseGpuDeviceId, UuidsIndicesAndReplicas) {
  auto uuid = ParseGpuDeviceId("GPU-8f2c1a3e-0b1d-4c55-9a7e-21d4c3b2a190");
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_EQ(uuid->uuid, "GPU-8f2c1a3e-0b1d-4c55-9a7e-21d4c3b2a190");
  EXPECT_FALSE(uuid->index.has_value());
  auto replica = ParseGpuDeviceId("GPU-8f2c1a3e::3");
  ASSERT_TRUE(replica.ok());
  EXPECT_EQ(replica->uuid, "GPU-8f2c1a3e");
  auto index = ParseGpuDeviceId("7");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->index, 7);
  EXPECT_TRUE(index->uuid.empty());
  EXPECT_EQ(ParseGpuDeviceId("1::0")->index, 1);
}

TEST(ParseGpuDeviceId, RefusesMigAndMalformed) {
  for (const char* bad :
       {"MIG-4f1e3a2b-1c0d", "", "-1", "1024", "99999", "0x1", "GPU-", "GPU-zz", "gpu0", " 1", "1.0"}) {
    auto ref = ParseGpuDeviceId(bad);
    EXPECT_FALSE(ref.ok()) << bad;
    if (!ref.ok()) {
      EXPECT_NE(ref.status().message().find(std::string("\"") + bad + "\""), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace rackwise::node_agent
