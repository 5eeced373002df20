// rackwise-ledger: the shared power ledger of racks that Slurm and Kubernetes both use (issue 17). Replicas
// elect a leader on etcd; the leader loads every allocation from etcd and serves rackwise.v1.PowerLedger,
// writing each change to etcd (fenced on its leadership) before it counts. SIGTERM revokes the lease so that
// another replica takes over at once. All logic lives in the rackwise_ledger library; this file wires it.
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
#include "ledger_grpc_service.h"
#include "ledger_shares.h"
#include "ledger_tls.h"
#include "shared_ledger.h"

namespace rackwise::ledger {
namespace {

void Log(const std::string& line) { k8s::LogLine("rackwise-ledger", line); }

struct LedgerFlags {
  std::string cluster, etcd = "http://127.0.0.1:2379", listen = "127.0.0.1:8890", name, replica_id, advertise;
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  int lease_ttl_s = 3;
  int etcd_timeout_ms = 2000;
  size_t etcd_max_txn_ops = EtcdLedgerStore::kDefaultMaxTxnOps;
};

void AddFlags(CLI::App& app, LedgerFlags* f) {
  app.add_option("--cluster", f->cluster, "cluster description (rackwise.yaml) of the racks the ledger covers")
      ->required();
  app.add_option("--etcd", f->etcd, "etcd client URL (http://HOST:PORT)");
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

int RunLedger(int argc, char** argv) {
  CLI::App app{"rackwise-ledger: the shared power ledger (leader-elected on etcd)"};
  LedgerFlags flags;
  AddFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  v1::ClusterDescription description;
  std::optional<Topology> topology = k8s::LoadClusterTopology(flags.cluster, &description, Log);
  if (!topology) return 1;

  // Separate clients: the election's renewals must never wait behind a large reconcile.
  EtcdClient store_client(flags.etcd, flags.etcd_timeout_ms);
  EtcdClient election_client(flags.etcd, std::min(flags.etcd_timeout_ms, flags.lease_ttl_s * 1000 / 3));
  const LedgerKeys keys = KeysOfLedger(flags.name);
  EtcdLedgerStore store(&store_client, keys, flags.etcd_max_txn_ops);
  absl::StatusOr<GuaranteedSlices> slices = SlicesOfDescription(*topology, description);
  if (!slices.ok()) {
    Log(absl::StrCat(flags.cluster, ": ledger.shares: ", slices.status().message()));
    return 1;
  }
  for (const OwnerShare& s : slices->shares())
    Log(absl::StrCat("owner prefix ", s.owner_prefix, ": guaranteed slice ", s.static_share, " of every budget"));
  SharedLedger shared(&*topology, &store, *std::move(slices));

  LeaderInfo self{flags.replica_id, flags.advertise};
  // Read by gRPC threads from the start; set once the server's port (this replica's address) is known.
  std::atomic<LeaderElection*> election_seen{nullptr};
  LedgerGrpcService service(&shared, self, [&election_seen] {
    LeaderElection* e = election_seen.load();
    return e ? e->leader() : LeaderInfo{};
  });
  std::shared_ptr<grpc::ServerCredentials> credentials;  // null: plain gRPC
  if (!flags.tls_cert_file.empty() || !flags.tls_key_file.empty() || !flags.tls_client_ca_file.empty()) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls =
        LedgerServerCredentials(flags.tls_cert_file, flags.tls_key_file, flags.tls_client_ca_file);
    if (!tls.ok()) {
      Log(std::string(tls.status().message()));
      return 1;
    }
    credentials = *std::move(tls);
  }
  LedgerGrpcServer server(&service, flags.listen, credentials);
  if (absl::Status s = server.Start(); !s.ok()) {
    Log(std::string(s.message()));
    return 1;
  }
  if (self.address.empty()) {
    std::string host;
    int port = 0;
    k8s::SplitHostPort(flags.listen, &host, &port);
    self.address = absl::StrCat(host, ":", server.port());
  }
  // Tests read the address up to the ';'.
  Log(absl::StrCat("replica ", self.replica_id, " serving rackwise.v1.PowerLedger on ", self.address, "; etcd ",
                   flags.etcd, ", keys ", keys.alloc_prefix, "*, leader key ", keys.leader,
                   credentials ? "; TLS" : "; plain gRPC"));

  LeaderElection::Callbacks callbacks;
  callbacks.elected = [&](int64_t revision, LeaderElection::Clock::time_point deadline) {
    store.SetFence(revision);
    absl::Status loaded = shared.TakeOver(deadline);
    if (loaded.ok()) Log(absl::StrCat("loaded ", shared.allocation_count(), " allocations from etcd"));
    return loaded;
  };
  callbacks.renewed = [&](LeaderElection::Clock::time_point deadline) { shared.ExtendLease(deadline); };
  callbacks.lost = [&] {
    shared.StopServing();
    store.SetFence(0);
    Log("no longer the leader: writes refused");
  };
  callbacks.log = Log;
  auto election = std::make_unique<LeaderElection>(
      &election_client, LeaderElection::Options{.key = keys.leader, .self = self, .lease_ttl_s = flags.lease_ttl_s},
      callbacks);
  election_seen.store(election.get());
  election->Start();

  k8s::WaitForStopSignal();
  Log("stopping");
  election->Stop();  // revokes the lease: a follower takes over without waiting for the TTL
  server.Stop();
  election_seen.store(nullptr);
  Log("stopped");
  return 0;
}

}  // namespace
}  // namespace rackwise::ledger

int main(int argc, char** argv) { return rackwise::ledger::RunLedger(argc, argv); }
