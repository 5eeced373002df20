// rackwise.v1.Placement over a real gRPC channel on loopback: reads need no credential, changes need the
// admin token; place/release/explain/state/caps/health round-trip through the same ledger as the extender.
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <limits>

#include "extender_fixture.h"
#include "grpc_service.h"

namespace rackwise::k8s::testing {
namespace {

class GrpcTest : public ExtenderHttpFixture {
 protected:
  void SetUp() override {
    StartExtender();
    AdminAuthConfig auth;
    auth.token = "admin-secret";
    grpc_ = std::make_unique<GrpcServer>(service_.get(), auth, GrpcServerOptions{});
    ASSERT_TRUE(grpc_->Start().ok());
    auto channel =
        grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_->port()), grpc::InsecureChannelCredentials());
    stub_ = v1::Placement::NewStub(channel);
  }
  void TearDown() override {
    grpc_->Stop();
    ExtenderHttpFixture::TearDown();
  }
  std::unique_ptr<grpc::ClientContext> Ctx(bool admin) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (admin) ctx->AddMetadata("authorization", "Bearer admin-secret");
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<v1::Placement::Stub> stub_;
};

TEST_F(GrpcTest, ReadsNeedNoCredentialChangesNeedTheAdminToken) {
  v1::PlaceRequest req;
  req.mutable_request()->set_id("job-1");
  req.mutable_request()->set_gpus(64);
  req.mutable_request()->set_locality(v1::LOCALITY_REQUIRED);
  v1::PlaceResponse resp;
  ASSERT_TRUE(stub_->Explain(Ctx(false).get(), req, &resp).ok());
  ASSERT_TRUE(resp.outcome().has_decision());
  EXPECT_EQ(resp.outcome().decision().domains(), 1u);
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);

  grpc::Status denied = stub_->Place(Ctx(false).get(), req, &resp);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto wrong = std::make_unique<grpc::ClientContext>();
  wrong->AddMetadata("authorization", "Bearer guess");
  EXPECT_EQ(stub_->Place(wrong.get(), req, &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  ASSERT_TRUE(stub_->Place(Ctx(true).get(), req, &resp).ok());
  ASSERT_TRUE(resp.outcome().has_decision());
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 1u);
  EXPECT_EQ(stub_->Place(Ctx(true).get(), req, &resp).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  v1::ClusterStateResponse state;
  ASSERT_TRUE(stub_->ClusterState(Ctx(false).get(), v1::ClusterStateRequest(), &state).ok());
  EXPECT_EQ(state.cluster(), "k8s-test");
  EXPECT_EQ(state.racks_size(), 4);
  uint32_t free = 0;
  for (const auto& d : state.domains()) free += d.free_gpus();
  EXPECT_EQ(free, 2u * 4 * 8 + 2u * 72 - 64);
  EXPECT_TRUE(state.synced());

  v1::ReleaseRequest rel;
  rel.set_id("job-1");
  v1::ReleaseResponse rr;
  EXPECT_FALSE(stub_->Release(Ctx(false).get(), rel, &rr).ok());
  ASSERT_TRUE(stub_->Release(Ctx(true).get(), rel, &rr).ok());
  EXPECT_TRUE(rr.released());
  ASSERT_TRUE(stub_->Release(Ctx(true).get(), rel, &rr).ok());
  EXPECT_FALSE(rr.released());
}

// SetPowerCap goes through the core's bounds (CheckCapKw): NaN, infinities, negatives and caps above 10 GW are
// refused and leave the cap as it was; so a cap can never overflow the ledger's milliwatts.
TEST_F(GrpcTest, PowerCapsOutsideTheBoundsAreRefused) {
  const double before = service_->WithLedger([](const Ledger& l) { return MilliwattsToWatts(l.rack_cap(0)); });
  v1::SetPowerCapRequest cap;
  cap.set_name("b0-r0000");
  v1::SetPowerCapResponse cr;
  for (double kw : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                    -1.0, -1e-300, 1e7 * 1.0001, 1e17, 1e300, std::numeric_limits<double>::max()}) {
    cap.set_power_cap_kw(kw);
    EXPECT_EQ(stub_->SetPowerCap(Ctx(true).get(), cap, &cr).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << kw;
    EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return MilliwattsToWatts(l.rack_cap(0)); }), before) << kw;
  }
  for (double kw : {0.0, 4.9e-324, 12.5, 1e7}) {
    cap.set_power_cap_kw(kw);
    EXPECT_TRUE(stub_->SetPowerCap(Ctx(true).get(), cap, &cr).ok()) << kw;
    EXPECT_TRUE(service_->CheckInvariants().ok());
  }
}

TEST_F(GrpcTest, PowerCapAndNodeHealthSteerTheExtender) {
  v1::SetPowerCapRequest cap;
  cap.set_name("b0-r0000");
  cap.set_power_cap_kw(12);  // 10 kW idle: room for two GPUs
  v1::SetPowerCapResponse cr;
  EXPECT_EQ(stub_->SetPowerCap(Ctx(false).get(), cap, &cr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(stub_->SetPowerCap(Ctx(true).get(), cap, &cr).ok());
  Json f = Post("/filter", FilterBody(MakePod("p", 4), {"b0-r0000-n01", "b0-r0001-n01"}));
  EXPECT_EQ(f["NodeNames"], Json::array({"b0-r0001-n01"}));
  cap.set_name("no-such-rack");
  EXPECT_EQ(stub_->SetPowerCap(Ctx(true).get(), cap, &cr).error_code(), grpc::StatusCode::NOT_FOUND);

  v1::SetNodeHealthRequest h;
  h.set_node("b0-r0001-n01");
  h.set_health(v1::NODE_HEALTH_DRAINED);
  v1::SetNodeHealthResponse hr;
  ASSERT_TRUE(stub_->SetNodeHealth(Ctx(true).get(), h, &hr).ok());
  f = Post("/filter", FilterBody(MakePod("p", 4), {"b0-r0000-n01", "b0-r0001-n01"}));
  EXPECT_TRUE(f["NodeNames"].empty());
  h.set_health(v1::NODE_HEALTH_UP);
  h.add_failed_gpus(99);
  EXPECT_EQ(stub_->SetNodeHealth(Ctx(true).get(), h, &hr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcTest, BadRequestsAreInvalidArgument) {
  v1::PlaceRequest req;
  v1::PlaceResponse resp;
  EXPECT_EQ(stub_->Explain(Ctx(false).get(), req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.mutable_request()->set_gpus(8);
  req.mutable_request()->add_allowed_nodes("nowhere");
  grpc::Status s = stub_->Explain(Ctx(false).get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("nowhere"), std::string::npos);
  v1::PlaceRequest big;
  big.mutable_request()->set_gpus(100000);
  ASSERT_TRUE(stub_->Explain(Ctx(false).get(), big, &resp).ok());
  ASSERT_TRUE(resp.outcome().has_refusal());
  EXPECT_TRUE(resp.outcome().refusal().unresolvable());
}

}  // namespace
}  // namespace rackwise::k8s::testing
