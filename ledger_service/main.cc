// rackwise-ledger: the shared power ledger of racks that Slurm and Kubernetes both use. Replicas
// elect a leader on etcd; the leader loads every allocation from etcd and serves rackwise.v1.PowerLedger,
// writing each change to etcd (fenced on its leadership) before it counts. SIGTERM revokes the lease so that
// another replica takes over at once. Every call is authenticated and every write authorized per owner prefix
// (--access-file, ledger_access.h) and audited (ledger_audit.h). All logic lives in the rackwise_ledger library;
// this file wires it.
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "daemon_support.h"
#include "etcd_client.h"
#include "etcd_ledger_store.h"
#include "leader_election.h"
#include "ledger_access.h"
#include "ledger_grpc_service.h"
#include "ledger_metrics_server.h"
#include "ledger_shares.h"
#include "ledger_tls.h"
#include "loopback.h"
#include "shared_ledger.h"

namespace rackwise::ledger {
namespace {

void Log(const std::string& line) { daemon::LogLine("rackwise-ledger", line); }

struct LedgerFlags {
  std::string cluster, etcd = "http://127.0.0.1:2379", listen = "127.0.0.1:8890", name, replica_id, advertise;
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  EtcdTls etcd_tls;
  std::string access_file, metrics_listen;
  bool insecure_loopback = false;
  int lease_ttl_s = 3;
  int etcd_timeout_ms = 2000;
  size_t etcd_max_txn_ops = EtcdLedgerStore::kDefaultMaxTxnOps;
};

void AddFlags(CLI::App& app, LedgerFlags* f) {
  app.add_option("--cluster", f->cluster, "cluster description (rackwise.yaml) of the racks the ledger covers")
      ->required();
  app.add_option("--etcd", f->etcd, "etcd client URL: https://HOST:PORT, or http:// to an etcd on loopback only");
  app.add_option("--etcd-cacert", f->etcd_tls.ca_file, "PEM CA that signed etcd's server certificate (https://)");
  app.add_option("--etcd-cert", f->etcd_tls.cert_file, "PEM client certificate presented to etcd (with --etcd-key)");
  app.add_option("--etcd-key", f->etcd_tls.key_file, "PEM private key of --etcd-cert");
  app.add_option("--access-file", f->access_file,
                 "YAML: the identities that may call, their tokens and certificate names, and the owner prefixes "
                 "each may write (required unless --insecure-loopback)");
  app.add_flag("--insecure-loopback", f->insecure_loopback,
               "callers without credentials may write any owner; --listen must be a loopback address");
  app.add_option("--metrics-listen", f->metrics_listen, "HOST:PORT for GET /metrics (plain HTTP; default: none)");
  app.add_option("--listen", f->listen, "HOST:PORT for rackwise.v1.PowerLedger (port 0: any free port)");
  app.add_option("--advertise", f->advertise,
                 "HOST:PORT other replicas send clients to when this one leads (default: --listen as bound)");
  app.add_option("--name", f->name, "the ledger's name: its keys are /rackwise/ledger/NAME/...")->required();
  app.add_option("--replica-id", f->replica_id, "this replica's id, unique among the ledger's replicas")
      ->required()
      ->check([](const std::string& id) {
        return id.empty() || id.find(' ') != std::string::npos ? std::string("non-empty, without spaces")
                                                               : std::string();
      });
  app.add_option("--lease-ttl-s", f->lease_ttl_s,
                 "leader lease TTL: a crashed leader is replaced within it (etcd grants at least about 2 s)")
      ->check(CLI::Range(2, 60));
  app.add_option("--tls-cert-file", f->tls_cert_file, "PEM certificate of the gRPC port (TLS; with --tls-key-file)");
  app.add_option("--tls-key-file", f->tls_key_file, "PEM private key of --tls-cert-file");
  app.add_option("--tls-client-ca-file", f->tls_client_ca_file,
                 "PEM CA every client's certificate must chain to (mutual TLS; needs --tls-cert-file)");
  app.add_option("--etcd-timeout-ms", f->etcd_timeout_ms, "bound of each etcd call")->check(CLI::Range(100, 60000));
  app.add_option("--etcd-max-txn-ops", f->etcd_max_txn_ops,
                 "writes per etcd transaction; at most etcd's own --max-txn-ops (default 128 on both sides)")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
}

// The flags that need no file read: TLS files given together, the etcd URL, the insecure port on loopback.
absl::Status CheckFlags(const LedgerFlags& flags) {
  if (absl::Status s = CheckEtcdEndpoint(flags.etcd, flags.etcd_tls); !s.ok()) return s;
  if (!flags.tls_client_ca_file.empty() && flags.tls_cert_file.empty())
    return absl::InvalidArgumentError("--tls-client-ca-file needs --tls-cert-file and --tls-key-file");
  if (!flags.insecure_loopback && flags.access_file.empty())
    return absl::InvalidArgumentError(
        "--access-file is required (who may call, and which owners each may write); --insecure-loopback runs "
        "without it on a loopback address only");
  std::string host;
  int port = 0;
  if (flags.insecure_loopback && (!daemon::SplitHostPort(flags.listen, &host, &port) || !IsLoopbackHost(host)))
    return absl::InvalidArgumentError(
        absl::StrCat("--insecure-loopback: --listen '", flags.listen, "' is not a loopback address (127.0.0.1, ::1)"));
  return absl::OkStatus();
}

absl::StatusOr<LedgerAccess> LoadAccess(const LedgerFlags& flags) {
  LedgerAccess access;
  if (!flags.access_file.empty()) {
    absl::StatusOr<LedgerAccess> loaded = LedgerAccess::Load(flags.access_file);
    if (!loaded.ok()) return loaded.status();
    access = *std::move(loaded);
  }
  if (flags.insecure_loopback) access.AllowAnonymous();
  bool any_token = false;
  for (const LedgerIdentity& identity : access.identities()) any_token |= identity.has_token;
  // Without a verified client certificate or a token nobody could ever call: a configuration mistake.
  if (!flags.insecure_loopback && flags.tls_client_ca_file.empty() && !any_token)
    return absl::InvalidArgumentError(absl::StrCat(flags.access_file, ": no identity has a token_file and there is ",
                                                   "no --tls-client-ca-file: no caller could authenticate"));
  return access;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const LedgerFlags& flags) {
  if (flags.tls_cert_file.empty() && flags.tls_key_file.empty())
    return std::shared_ptr<grpc::ServerCredentials>();  // plain gRPC
  return LedgerServerCredentials(flags.tls_cert_file, flags.tls_key_file, flags.tls_client_ca_file);
}

// What the replica serves and how callers are checked: the line tests read the address from (up to the ';').
std::string ServingLine(const LedgerFlags& flags, const LeaderInfo& self, const LedgerKeys& keys, bool tls) {
  return absl::StrCat("replica ", self.replica_id, " serving rackwise.v1.PowerLedger on ", self.address, "; etcd ",
                      flags.etcd, ", keys ", keys.alloc_prefix, "*, leader key ", keys.leader,
                      tls ? (flags.tls_client_ca_file.empty() ? "; TLS" : "; mutual TLS") : "; plain gRPC",
                      flags.insecure_loopback ? "; INSECURE loopback: callers without credentials write anything"
                                              : "; callers authenticated");
}

// The election, started: `shared` serves while this replica leads.
std::unique_ptr<LeaderElection> StartElection(const LedgerFlags& flags, EtcdClient* client, const LedgerKeys& keys,
                                              const LeaderInfo& self, EtcdLedgerStore* store, SharedLedger* shared) {
  LeaderElection::Callbacks callbacks;
  callbacks.elected = [store, shared](int64_t revision, LeaderElection::Clock::time_point deadline) {
    store->SetFence(revision);
    absl::Status loaded = shared->TakeOver(deadline);
    if (loaded.ok()) Log(absl::StrCat("loaded ", shared->allocation_count(), " allocations from etcd"));
    return loaded;
  };
  callbacks.renewed = [shared](LeaderElection::Clock::time_point deadline) { shared->ExtendLease(deadline); };
  callbacks.lost = [store, shared] {
    shared->StopServing();
    store->SetFence(0);
    Log("no longer the leader: writes refused");
  };
  callbacks.log = Log;
  auto election = std::make_unique<LeaderElection>(
      client, LeaderElection::Options{.key = keys.leader, .self = self, .lease_ttl_s = flags.lease_ttl_s}, callbacks);
  election->Start();
  return election;
}

int Fail(const absl::Status& s) {
  Log(std::string(s.message()));
  return 1;
}

int RunLedger(const LedgerFlags& flags) {
  if (absl::Status s = CheckFlags(flags); !s.ok()) return Fail(s);
  absl::StatusOr<LedgerAccess> access = LoadAccess(flags);
  if (!access.ok()) return Fail(access.status());
  Log(absl::StrCat("access: ", access->Describe()));
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentials(flags);  // null: plain
  if (!credentials.ok()) return Fail(credentials.status());
  v1::ClusterDescription description;
  std::optional<Topology> topology = daemon::LoadClusterTopology(flags.cluster, &description, Log);
  if (!topology) return 1;
  absl::StatusOr<GuaranteedSlices> slices = SlicesOfDescription(*topology, description);
  if (!slices.ok())
    return Fail(
        absl::InvalidArgumentError(absl::StrCat(flags.cluster, ": ledger.shares: ", slices.status().message())));
  for (const OwnerShare& s : slices->shares())
    Log(absl::StrCat("owner prefix ", s.owner_prefix, ": guaranteed slice ", s.static_share, " of every budget"));

  // Separate clients: the election's renewals must never wait behind a large reconcile.
  EtcdClient store_client(flags.etcd, flags.etcd_timeout_ms, flags.etcd_tls);
  EtcdClient election_client(flags.etcd, std::min(flags.etcd_timeout_ms, flags.lease_ttl_s * 1000 / 3), flags.etcd_tls);
  const LedgerKeys keys = KeysOfLedger(flags.name);
  EtcdLedgerStore store(&store_client, keys, flags.etcd_max_txn_ops);
  SharedLedger shared(&*topology, &store, *std::move(slices));
  LedgerAudit audit(Log);
  LeaderInfo self{flags.replica_id, flags.advertise};
  // Read by gRPC threads from the start; set once the server's port (this replica's address) is known.
  std::atomic<LeaderElection*> election_seen{nullptr};
  LedgerGrpcService service(
      &shared, self,
      [&election_seen] {
        LeaderElection* e = election_seen.load();
        return e ? e->leader() : LeaderInfo{};
      },
      &*access, &audit);
  MetricsServer metrics([&] { return LedgerMetricsText(audit, shared, access->insecure()); });
  if (!flags.metrics_listen.empty()) {
    if (absl::Status s = metrics.Start(flags.metrics_listen); !s.ok()) return Fail(s);
    Log(absl::StrCat("metrics on port ", metrics.port(), " (GET /metrics)"));
  }
  LedgerGrpcServer server(&service, flags.listen, *credentials);
  if (absl::Status s = server.Start(); !s.ok()) return Fail(s);
  if (self.address.empty()) {
    std::string host;
    int port = 0;
    daemon::SplitHostPort(flags.listen, &host, &port);
    self.address = absl::StrCat(host, ":", server.port());
  }
  Log(ServingLine(flags, self, keys, *credentials != nullptr));
  std::unique_ptr<LeaderElection> election = StartElection(flags, &election_client, keys, self, &store, &shared);
  election_seen.store(election.get());
  daemon::WaitForStopSignal();
  Log("stopping");
  election->Stop();  // revokes the lease: a follower takes over without waiting for the TTL
  server.Stop();
  metrics.Stop();
  election_seen.store(nullptr);
  Log("stopped");
  return 0;
}

}  // namespace
}  // namespace rackwise::ledger

int main(int argc, char** argv) {
  CLI::App app{"rackwise-ledger: the shared power ledger (leader-elected on etcd)"};
  rackwise::ledger::LedgerFlags flags;
  rackwise::ledger::AddFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return rackwise::ledger::RunLedger(flags);
}
