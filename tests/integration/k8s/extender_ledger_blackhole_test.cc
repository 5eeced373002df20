// The extender's LedgerLink to a ledger that accepts connections and never answers (a black hole, worse than a
// refused connection): no kube-scheduler verb waits longer than the link's deadlines, and the bind is decided
// within Kubernetes's guaranteed slice. (Over real sockets with a real replica: etcd_extender_test.cc.)
#include "ledger_link.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>

#include "extender_service.h"
#include "in_process_ledger.h"

namespace rackwise::ledger {
namespace {

using Clock = std::chrono::steady_clock;

// A loopback port that listens and never accepts: the kernel completes connections, nobody answers.
class BlackHole {
 public:
  BlackHole() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~BlackHole() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ExtenderLedgerLinkTest, ALedgerThatNeverAnswersHoldsNoVerbPastItsDeadlines) {
  BlackHole hole;
  v1::ClusterDescription description = testing::LoadDescription(testing::SharedRacks());
  description.mutable_ledger()->set_url(absl::StrCat("127.0.0.1:", hole.port()));
  const auto deadline = std::chrono::milliseconds(description.ledger().deadline_ms());
  absl::StatusOr<Topology> topology = Topology::Build(description);
  ASSERT_TRUE(topology.ok()) << topology.status();
  k8s::ExtenderMetrics metrics;
  k8s::ExtenderService service(std::make_unique<Topology>(*std::move(topology)), {}, nullptr, &metrics);
  auto gate = LedgerLink::Create(service.topology(), description, "k8s/", nullptr);
  ASSERT_TRUE(gate.ok()) << gate.status();
  service.SetSharedLedger(gate->get());

  Clock::time_point start = Clock::now();
  service.SetSynced(true);  // the first sync: a reconcile, then a list, each bounded by the deadline
  EXPECT_LT(Clock::now() - start, 2 * deadline + std::chrono::milliseconds(300));
  EXPECT_TRUE((*gate)->in_fallback());

  k8s::ExtenderArgs args;
  args.pod = {{"metadata", {{"name", "a"}, {"namespace", "ml"}, {"uid", "uid-a"}}},
              {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"limits", {{k8s::kGpuResource, 4}}}}}}}}}},
              {"status", {{"phase", "Pending"}}}};
  args.SetNodeNames({"n2"});
  start = Clock::now();
  const k8s::FilterResult filtered = service.Filter(args, 1'000);
  ASSERT_EQ(filtered.feasible.size(), 1u) << filtered.error;
  EXPECT_EQ(service.Bind({"a", "ml", "uid-a", "n2"}, 1'000), "") << "within the slice";
  EXPECT_LT(Clock::now() - start, deadline + std::chrono::milliseconds(300));
}

}  // namespace
}  // namespace rackwise::ledger
