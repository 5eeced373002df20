// rackwise.v1.Placement over the extender service (see grpc_service.h).
#include "grpc_service.h"

#include "grpc_status.h"
#include "kube_config.h"
#include "rackwise/named_request.h"
#include "rackwise/power_view.h"

#include <bit>
#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

class Timer {
 public:
  Timer(ExtenderService* svc, Verb verb) : svc_(svc), verb_(verb), start_(std::chrono::steady_clock::now()) {}
  ~Timer() {
    svc_->metrics().ObserveLatency(verb_,
                                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

 private:
  ExtenderService* svc_;
  Verb verb_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

absl::StatusOr<PlacementRequest> RequestFromProto(const Topology& topology, const v1::PlacementRequest& p) {
  NamedRequest named;
  named.id = p.id();
  named.gpus = p.gpus();
  named.gpus_per_node = p.gpus_per_node();
  switch (p.locality()) {
    case v1::LOCALITY_REQUIRED: named.locality = Locality::kRequired; break;
    case v1::LOCALITY_PREFERRED: named.locality = Locality::kPreferred; break;
    case v1::LOCALITY_NONE: named.locality = Locality::kNone; break;
    default: break;
  }
  named.watts_per_gpu = p.watts_per_gpu();  // bounded by the core (CheckWattsPerGpu, the node types' floors)
  named.allowed_nodes.assign(p.allowed_nodes().begin(), p.allowed_nodes().end());
  named.excluded_nodes.assign(p.excluded_nodes().begin(), p.excluded_nodes().end());
  absl::StatusOr<PlacementRequest> r = ResolveRequest(topology, named);
  if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat("request.", r.status().message()));
  return r;
}

void OutcomeToProto(const Topology& topology, const PlacementOutcome& outcome, v1::PlacementOutcome* proto) {
  if (const auto* d = std::get_if<PlacementDecision>(&outcome)) {
    v1::PlacementDecision* out = proto->mutable_decision();
    for (const NodeGpus& ng : d->nodes) {
      v1::NodeGpus* n = out->add_nodes();
      n->set_node(topology.nodes()[ng.node].name);
      for (int gpu : GpuIndices(ng.gpus)) n->add_gpus(gpu);
    }
    out->set_domains(d->domains);
    out->set_min_domains(d->min_domains);
    for (const RackPower& rp : d->racks) {
      out->add_racks(topology.racks()[rp.rack].name);
      v1::RackWatts* w = out->add_watts();
      w->set_rack(topology.racks()[rp.rack].name);
      w->set_watts(MilliwattsToWatts(rp.added));
    }
    out->set_rail_aligned(d->rail_aligned);
    return;
  }
  const auto& r = std::get<PlacementRefusal>(outcome);
  v1::PlacementRefusal* out = proto->mutable_refusal();
  out->set_message(r.Message());
  out->set_unresolvable(r.unresolvable);
  for (int i = 0; i < static_cast<int>(NodeReason::kCount); ++i) {
    if (r.counts[i] == 0) continue;
    v1::RefusalReason* reason = out->add_reasons();
    reason->set_reason(NodeReasonText(static_cast<NodeReason>(i)));
    reason->set_nodes(r.counts[i]);
  }
}

grpc::Status PlacementGrpcService::Admin(grpc::ServerContext* ctx) const {
  CallerCredentials caller;
  const auto& md = ctx->client_metadata();
  if (auto it = md.find("authorization"); it != md.end())
    caller.authorization.assign(it->second.data(), it->second.size());
  std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& v : auth->FindPropertyValues("x509_common_name")) {
      caller.common_names.emplace_back(v.data(), v.size());
    }
    caller.verified_client_cert = !auth->FindPropertyValues("x509_pem_cert").empty() || !caller.common_names.empty();
  }
  absl::Status s = CheckAdmin(auth_, caller);
  if (!s.ok()) service_->metrics().CountDecision(Verb::kGrpcOther, "denied");
  return daemon::ToGrpcStatus(s);
}

grpc::Status PlacementGrpcService::DoPlace(const v1::PlaceRequest* req, v1::PlaceResponse* resp, bool commit) {
  Timer timer(service_, Verb::kGrpcPlace);
  absl::StatusOr<PlacementRequest> request = RequestFromProto(service_->topology(), req->request());
  if (!request.ok()) return daemon::ToGrpcStatus(request.status());
  OversubscribedWatts count;
  absl::StatusOr<PlacementOutcome> outcome = service_->Place(*request, commit, &count);
  if (!outcome.ok()) return daemon::ToGrpcStatus(outcome.status());
  OutcomeToProto(service_->topology(), *outcome, resp->mutable_outcome());
  if (count.applied) {
    resp->mutable_oversubscribed()->set_id(request->id);
    resp->mutable_oversubscribed()->set_counted_watts_per_gpu(count.counted_watts_per_gpu);
    resp->mutable_oversubscribed()->set_declared_watts_per_gpu(count.declared_watts_per_gpu);
  }
  resp->set_oversubscription_off(count.why_not);
  bool placed = std::holds_alternative<PlacementDecision>(*outcome);
  service_->metrics().CountDecision(
      Verb::kGrpcPlace, commit ? (placed ? "placed" : "refused") : (placed ? "explained_fits" : "explained_refused"));
  return grpc::Status::OK;
}

grpc::Status PlacementGrpcService::Place(grpc::ServerContext* ctx, const v1::PlaceRequest* req,
                                         v1::PlaceResponse* resp) {
  if (grpc::Status s = Admin(ctx); !s.ok()) return s;
  if (req->request().id().empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "request.id: required");
  return DoPlace(req, resp, true);
}

grpc::Status PlacementGrpcService::Explain(grpc::ServerContext*, const v1::PlaceRequest* req, v1::PlaceResponse* resp) {
  return DoPlace(req, resp, false);
}

grpc::Status PlacementGrpcService::Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req,
                                           v1::ReleaseResponse* resp) {
  if (grpc::Status s = Admin(ctx); !s.ok()) return s;
  Timer timer(service_, Verb::kGrpcOther);
  resp->set_released(service_->Release(req->id()));
  return grpc::Status::OK;
}

grpc::Status PlacementGrpcService::ClusterState(grpc::ServerContext*, const v1::ClusterStateRequest*,
                                                v1::ClusterStateResponse* resp) {
  Timer timer(service_, Verb::kGrpcOther);
  StateSnapshot s = service_->Snapshot();
  resp->set_cluster(service_->topology().cluster_name());
  for (const RackSnapshot& r : s.racks) {
    v1::RackPower* p = resp->add_racks();
    p->set_rack(r.name);
    p->set_draw_watts(MilliwattsToWatts(r.draw));
    p->set_cap_watts(MilliwattsToWatts(r.cap));
    p->set_headroom_watts(MilliwattsToWatts(r.headroom));
  }
  for (const DomainSnapshot& d : s.domains) {
    v1::DomainGpus* g = resp->add_domains();
    g->set_domain(d.name);
    g->set_rack(d.rack);
    g->set_free_gpus(d.free_gpus);
    g->set_gpus(d.gpus);
  }
  resp->set_allocations(s.allocations);
  resp->set_reservations(s.reservations);
  resp->set_free_reserved_slots(s.free_reserved_slots);
  resp->set_synced(service_->synced());
  for (const PowerViewRow& row : service_->WithLedger([](const Ledger& l) { return BuildPowerView(l); })) {
    v1::PowerRow* p = resp->add_power();
    p->set_kind(row.kind == PowerViewRow::Kind::kRack ? "rack" : "power_domain");
    p->set_name(row.name);
    p->set_parent(row.parent);
    p->set_draw_watts(MilliwattsToWatts(row.draw));
    p->set_counted_watts(MilliwattsToWatts(row.counted));
    if (row.measured) p->set_measured_watts(MilliwattsToWatts(*row.measured));
    p->set_cap_watts(MilliwattsToWatts(row.cap));
    p->set_usable_cap_watts(MilliwattsToWatts(row.usable_cap));
    p->set_headroom_watts(MilliwattsToWatts(row.headroom));
    p->set_jobs(row.jobs);
    p->set_used_gpus(row.used_gpus);
    p->set_gpus(row.gpus);
  }
  return grpc::Status::OK;
}

grpc::Status PlacementGrpcService::SetPowerCap(grpc::ServerContext* ctx, const v1::SetPowerCapRequest* req,
                                               v1::SetPowerCapResponse*) {
  if (grpc::Status s = Admin(ctx); !s.ok()) return s;
  Timer timer(service_, Verb::kGrpcOther);
  return daemon::ToGrpcStatus(service_->SetPowerCap(req->name(), req->power_cap_kw()));
}

grpc::Status PlacementGrpcService::SetNodeHealth(grpc::ServerContext* ctx, const v1::SetNodeHealthRequest* req,
                                                 v1::SetNodeHealthResponse*) {
  if (grpc::Status s = Admin(ctx); !s.ok()) return s;
  Timer timer(service_, Verb::kGrpcOther);
  NodeHealth h = NodeHealth::kUp;
  switch (req->health()) {
    case v1::NODE_HEALTH_UNSPECIFIED:
    case v1::NODE_HEALTH_UP: h = NodeHealth::kUp; break;
    case v1::NODE_HEALTH_DRAINED: h = NodeHealth::kDrained; break;
    case v1::NODE_HEALTH_DOWN: h = NodeHealth::kDown; break;
    default: return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "health: unknown value");
  }
  std::vector<int> failed;
  for (uint32_t g : req->failed_gpus()) {
    if (g >= static_cast<uint32_t>(kMaxGpusPerNode)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat("failed_gpus: ", g, " is out of range"));
    }
    failed.push_back(static_cast<int>(g));
  }
  return daemon::ToGrpcStatus(service_->SetNodeHealth(req->node(), h, failed));
}

GrpcServer::GrpcServer(ExtenderService* service, AdminAuthConfig auth, GrpcServerOptions options)
    : impl_(service, std::move(auth)), options_(std::move(options)) {}

GrpcServer::~GrpcServer() { Stop(); }

absl::Status GrpcServer::Start() {
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options_.cert_file.empty() || !options_.key_file.empty()) {
    absl::StatusOr<std::string> cert = ReadFile(options_.cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile(options_.key_file);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!options_.admin_ca_file.empty()) {
      absl::StatusOr<std::string> ca = ReadFile(options_.admin_ca_file);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
      // Ask for a certificate and verify it when given; readers without one are still served.
      ssl.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    creds = grpc::SslServerCredentials(ssl);
  } else if (!options_.admin_ca_file.empty()) {
    return absl::InvalidArgumentError("an admin CA for client certificates needs TLS on the gRPC port");
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.address, creds, &port_);
  builder.RegisterService(&impl_);
  builder.SetMaxReceiveMessageSize(4 << 20);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.address));
  return absl::OkStatus();
}

void GrpcServer::Stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

}  // namespace rackwise::k8s
