// The core's state for 72,000 GPUs (9,000 HGX nodes, 70% allocated) must stay under 64 MiB, so that the
// Slurm controller and the extender can hold it without thought. Measured with glibc's allocator statistics.
#include <gtest/gtest.h>

#include <memory>

#include "rackwise/ledger.h"
#include "rackwise/synthetic_cluster.h"
#include "rackwise/testing/heap_usage.h"

namespace rackwise {
namespace {

TEST(MemoryFootprintTest, SeventyTwoThousandGpusFitIn64MiB) {
  RACKWISE_SKIP_WITHOUT_HEAP_STATISTICS();
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2250, 4, 0, 8, 8, 0});
  const v1::ClusterDescription description = BuildSyntheticCluster(spec);
  const size_t before = ::rackwise::testing::HeapBytesInUse();
  auto topology = std::make_unique<Topology>(*Topology::Build(description));
  auto ledger = std::make_unique<Ledger>(*topology);
  ASSERT_EQ(topology->total_gpus(), 72'000);
  // 70% of the GPUs in single-node allocations of 4 and 8 GPUs: many small allocations is the costly case.
  int gpus = 0;
  for (NodeId n = 0; gpus < 50'400; ++n) {
    const GpuMask mask = n % 2 ? 0xff : 0x0f;
    ASSERT_TRUE(ledger->Commit({"job" + std::to_string(n), {{n, mask}}, 0}).ok());
    gpus += n % 2 ? 8 : 4;
  }
  const double mib = static_cast<double>(::rackwise::testing::HeapBytesInUse() - before) / (1 << 20);
  RecordProperty("core_state_MiB", std::to_string(mib));
  EXPECT_LT(mib, 64.0);
  EXPECT_GT(mib, 0.5) << "the measurement saw nothing: mallinfo2 is not tracking these allocations";
}

}  // namespace
}  // namespace rackwise
