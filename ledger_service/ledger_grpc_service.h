// rackwise.v1.PowerLedger over a SharedLedger. A replica that does not lead answers every call but Status with
// FAILED_PRECONDITION naming the leader, and the leader's address in the trailing metadata
// kLeaderAddressMetadata so that a client can redirect (UNAVAILABLE while no leader is known).
// Every call is authenticated first (ledger_access.h: an unauthenticated caller learns nothing, not even who
// leads), and a write is authorized for the caller's owner prefixes before the redirect; every write, and every
// refused read, goes to the audit trail (ledger_audit.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "leader_election.h"
#include "ledger_access.h"
#include "ledger_audit.h"
#include "ledger_client.h"  // kLeaderAddressMetadata
#include "rackwise/v1/ledger_service.grpc.pb.h"
#include "shared_ledger.h"

namespace rackwise::ledger {

class LedgerGrpcService final : public v1::PowerLedger::Service {
 public:
  // `current_leader` says who leads as this replica last saw it. `access` and `audit` must outlive the service.
  LedgerGrpcService(SharedLedger* ledger, LeaderInfo self, std::function<LeaderInfo()> current_leader,
                    const LedgerAccess* access, LedgerAudit* audit)
      : ledger_(ledger),
        self_(std::move(self)),
        current_leader_(std::move(current_leader)),
        access_(access),
        audit_(audit) {}

  grpc::Status Reserve(grpc::ServerContext* ctx, const v1::ReserveRequest* req, v1::ReserveResponse* resp) override;
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseOwnerRequest* req,
                       v1::ReleaseOwnerResponse* resp) override;
  grpc::Status Reconcile(grpc::ServerContext* ctx, const v1::ReconcileRequest* req,
                         v1::ReconcileResponse* resp) override;
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest* req, v1::ListResponse* resp) override;
  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest* req, v1::StatusResponse* resp) override;

 private:
  // OK when this replica serves; else the redirect (or UNAVAILABLE) to answer with.
  grpc::Status Redirect(grpc::ServerContext* ctx) const;
  // The caller's identity, or the (audited) refusal to answer `verb` with.
  absl::StatusOr<const LedgerIdentity*> Caller(grpc::ServerContext* ctx, absl::string_view verb) const;
  // A write of `owner` (an owner, or a Reconcile's prefix) by `verb`: authenticated, authorized, sent to the
  // leader, then `apply`; audited whatever the outcome.
  grpc::Status Write(grpc::ServerContext* ctx, absl::string_view verb, absl::string_view owner,
                     const std::function<grpc::Status()>& apply);

  SharedLedger* ledger_;
  LeaderInfo self_;
  std::function<LeaderInfo()> current_leader_;
  const LedgerAccess* access_;
  LedgerAudit* audit_;
};

// What the call presents: its authorization metadata and, when gRPC verified a client certificate, the
// certificate's subject CN and SANs.
PeerCredentials PeerOf(const grpc::ServerContext& ctx);

// Owns the grpc::Server; Start() binds (port 0: any free port, see port()). `credentials`: TLS (ledger_tls.h);
// null: plain gRPC.
class LedgerGrpcServer {
 public:
  LedgerGrpcServer(LedgerGrpcService* service, std::string address,
                   std::shared_ptr<grpc::ServerCredentials> credentials = nullptr)
      : service_(service), address_(std::move(address)), credentials_(std::move(credentials)) {}
  ~LedgerGrpcServer() { Stop(); }
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  LedgerGrpcService* service_;
  std::string address_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace rackwise::ledger
