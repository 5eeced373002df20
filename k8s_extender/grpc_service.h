// The gRPC rackwise.v1.Placement service over ExtenderService: converts messages to core types and back,
// checks the admin credential on calls that change state. Bad requests are INVALID_ARGUMENT naming the field.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "admin_auth.h"
#include "extender_service.h"
#include "rackwise/v1/placement_service.grpc.pb.h"

namespace rackwise::k8s {

class PlacementGrpcService final : public v1::Placement::Service {
 public:
  PlacementGrpcService(ExtenderService* service, AdminAuthConfig auth) : service_(service), auth_(std::move(auth)) {}

  grpc::Status Place(grpc::ServerContext* ctx, const v1::PlaceRequest* req, v1::PlaceResponse* resp) override;
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req, v1::ReleaseResponse* resp) override;
  grpc::Status Explain(grpc::ServerContext* ctx, const v1::PlaceRequest* req, v1::PlaceResponse* resp) override;
  grpc::Status ClusterState(grpc::ServerContext* ctx, const v1::ClusterStateRequest* req,
                            v1::ClusterStateResponse* resp) override;
  grpc::Status SetPowerCap(grpc::ServerContext* ctx, const v1::SetPowerCapRequest* req,
                           v1::SetPowerCapResponse* resp) override;
  grpc::Status SetNodeHealth(grpc::ServerContext* ctx, const v1::SetNodeHealthRequest* req,
                             v1::SetNodeHealthResponse* resp) override;

 private:
  grpc::Status Admin(grpc::ServerContext* ctx) const;
  grpc::Status DoPlace(const v1::PlaceRequest* req, v1::PlaceResponse* resp, bool commit);

  ExtenderService* service_;
  AdminAuthConfig auth_;
};

struct GrpcServerOptions {
  std::string address = "127.0.0.1:0";  // port 0: pick one (see GrpcServer::port())
  std::string cert_file, key_file;      // TLS for the gRPC port
  std::string admin_ca_file;            // with TLS: client certificates signed by it are admins
};

// Owns the grpc::Server. Start() binds; the server runs on gRPC's own threads until Stop().
class GrpcServer {
 public:
  GrpcServer(ExtenderService* service, AdminAuthConfig auth, GrpcServerOptions options);
  ~GrpcServer();
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  PlacementGrpcService impl_;
  GrpcServerOptions options_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Conversions, public for tests.
absl::StatusOr<PlacementRequest> RequestFromProto(const Topology& topology, const v1::PlacementRequest& proto);
void OutcomeToProto(const Topology& topology, const PlacementOutcome& outcome, v1::PlacementOutcome* proto);

}  // namespace rackwise::k8s
