// See ledger_grpc_service.h.
#include "ledger_grpc_service.h"

#include <chrono>

#include <grpc/grpc_security_constants.h>

#include "absl/strings/str_cat.h"
#include "grpc_status.h"

namespace rackwise::ledger {
namespace {

double Kw(Milliwatts mw) { return static_cast<double>(mw) / 1e6; }

}  // namespace

PeerCredentials PeerOf(const grpc::ServerContext& ctx) {
  PeerCredentials peer;
  const auto& metadata = ctx.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end())
    peer.authorization.assign(it->second.data(), it->second.size());
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  // Only a certificate gRPC verified against --tls-client-ca-file makes the peer authenticated.
  if (auth && auth->IsPeerAuthenticated()) {
    for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
      for (const grpc::string_ref& v : auth->FindPropertyValues(property))
        peer.cert_names.emplace_back(v.data(), v.size());
    }
  }
  return peer;
}

absl::StatusOr<const LedgerIdentity*> LedgerGrpcService::Caller(grpc::ServerContext* ctx,
                                                                absl::string_view verb) const {
  absl::StatusOr<const LedgerIdentity*> who = access_->Authenticate(PeerOf(*ctx));
  if (!who.ok()) audit_->Record(kNoIdentity, verb, "", "unauthenticated", who.status().message());
  return who;
}

grpc::Status LedgerGrpcService::Write(grpc::ServerContext* ctx, absl::string_view verb, absl::string_view owner,
                                      const std::function<grpc::Status()>& apply) {
  absl::StatusOr<const LedgerIdentity*> who = access_->Authenticate(PeerOf(*ctx));
  if (!who.ok()) {
    audit_->Record(kNoIdentity, verb, owner, "unauthenticated", who.status().message());
    return daemon::ToGrpcStatus(who.status());
  }
  if (absl::Status allowed = LedgerAccess::AuthorizeWrite(**who, verb, owner); !allowed.ok()) {
    audit_->Record((*who)->name, verb, owner, "denied", allowed.message());
    return daemon::ToGrpcStatus(allowed);
  }
  if (grpc::Status r = Redirect(ctx); !r.ok()) {
    audit_->Record((*who)->name, verb, owner,
                   r.error_code() == grpc::StatusCode::FAILED_PRECONDITION ? "not_leader" : "unavailable");
    return r;
  }
  const grpc::Status s = apply();
  audit_->Record((*who)->name, verb, owner, AuditOutcome(s.error_code()), s.error_message());
  return s;
}

grpc::Status LedgerGrpcService::Redirect(grpc::ServerContext* ctx) const {
  if (ledger_->serving()) return grpc::Status::OK;
  const LeaderInfo leader = current_leader_();
  if (leader.replica_id.empty() || leader.replica_id == self_.replica_id)
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("replica ", self_.replica_id, " is not the leader and knows no other leader yet"));
  ctx->AddTrailingMetadata(kLeaderAddressMetadata, leader.address);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("replica ", self_.replica_id, " is not the leader; the leader is ",
                                   leader.replica_id, " at ", leader.address));
}

grpc::Status LedgerGrpcService::Reserve(grpc::ServerContext* ctx, const v1::ReserveRequest* req, v1::ReserveResponse*) {
  return Write(ctx, "Reserve", req->allocation().id(),
               [&] { return daemon::ToGrpcStatus(ledger_->Reserve(req->allocation())); });
}

grpc::Status LedgerGrpcService::Release(grpc::ServerContext* ctx, const v1::ReleaseOwnerRequest* req,
                                        v1::ReleaseOwnerResponse* resp) {
  return Write(ctx, "Release", req->owner(), [&] {
    absl::StatusOr<bool> released = ledger_->Release(req->owner());
    if (!released.ok()) return daemon::ToGrpcStatus(released.status());
    resp->set_released(*released);
    return grpc::Status::OK;
  });
}

grpc::Status LedgerGrpcService::Reconcile(grpc::ServerContext* ctx, const v1::ReconcileRequest* req,
                                          v1::ReconcileResponse* resp) {
  // Listed owners outside the prefix are refused by the ledger itself, so the prefix is what is authorized.
  return Write(ctx, "Reconcile", req->owner_prefix(), [&] {
    // A copy (a few ms for 10,000): the ledger takes a span, and a repeated field of messages is not contiguous.
    const std::vector<v1::Allocation> listed(req->allocations().begin(), req->allocations().end());
    absl::StatusOr<ReconcileOutcome> outcome = ledger_->Reconcile(req->owner_prefix(), listed);
    if (!outcome.ok()) return daemon::ToGrpcStatus(outcome.status());
    resp->set_added(outcome->added);
    resp->set_replaced(outcome->replaced);
    resp->set_released(outcome->released);
    resp->set_unchanged(outcome->unchanged);
    for (std::string& r : outcome->refused) resp->add_refused(std::move(r));
    return grpc::Status::OK;
  });
}

grpc::Status LedgerGrpcService::List(grpc::ServerContext* ctx, const v1::ListRequest* req, v1::ListResponse* resp) {
  if (absl::StatusOr<const LedgerIdentity*> who = Caller(ctx, "List"); !who.ok())
    return daemon::ToGrpcStatus(who.status());
  if (grpc::Status r = Redirect(ctx); !r.ok()) return r;
  absl::StatusOr<std::vector<v1::Allocation>> held = ledger_->List(req->owner_prefix());
  if (!held.ok()) return daemon::ToGrpcStatus(held.status());
  for (v1::Allocation& a : *held) *resp->add_allocations() = std::move(a);
  return grpc::Status::OK;
}

grpc::Status LedgerGrpcService::Status(grpc::ServerContext* ctx, const v1::StatusRequest*, v1::StatusResponse* resp) {
  absl::StatusOr<const LedgerIdentity*> who = Caller(ctx, "Status");
  if (!who.ok()) return daemon::ToGrpcStatus(who.status());
  resp->set_caller_identity((*who)->name);
  resp->set_insecure_loopback(access_->insecure());
  const LeaderInfo leader = current_leader_();
  resp->set_leader_id(leader.replica_id);
  resp->set_leader_address(leader.address);
  resp->set_serving(ledger_->serving());
  resp->set_replica_id(self_.replica_id);
  resp->set_allocations(ledger_->allocation_count());
  for (const RackDrawByOwner& d : ledger_->DrawByOwner()) {
    v1::RackDraw* rack = resp->add_racks();
    rack->set_rack(d.rack);
    rack->set_cap_kw(Kw(d.cap));
    rack->set_idle_kw(Kw(d.idle));
    rack->set_slurm_kw(Kw(d.slurm));
    rack->set_k8s_kw(Kw(d.k8s));
    rack->set_other_kw(Kw(d.other));
  }
  return grpc::Status::OK;
}

absl::Status LedgerGrpcServer::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address_, credentials_ ? credentials_ : grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_);
  // A reconcile of 10,000 allocations is about 1 MB.
  builder.SetMaxReceiveMessageSize(64 << 20);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return absl::UnavailableError(absl::StrCat("gRPC: cannot listen on ", address_));
  return absl::OkStatus();
}

void LedgerGrpcServer::Stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

}  // namespace rackwise::ledger
