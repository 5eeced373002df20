// The fixture of the ledger's tests against a real etcd (/usr/bin/etcd on free loopback ports, its data in a
// fresh directory) and real rackwise-ledger replicas, shared by the etcd_*_test.cc files. Skips when
// /usr/bin/etcd is missing.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "etcd_client.h"
#include "etcd_ledger_store.h"
#include "leader_election.h"
#include "ledger_client.h"
#include "rackwise/testing/child_process.h"

namespace rackwise::ledger::testing {

using rackwise::testing::ChildProcess;
using rackwise::testing::FreeLoopbackPort;
using rackwise::testing::WaitFor;

using std::chrono::milliseconds;

constexpr char kEtcd[] = "/usr/bin/etcd";
constexpr int kLeaseTtlS = 2;

inline std::string TwoRacks() { return absl::StrCat(RACKWISE_LEDGER_TESTDATA, "/two_racks.yaml"); }

// etcd's own TLS (its --cert-file, --key-file, and --trusted-ca-file with --client-cert-auth), and the client's.
struct EtcdServerTls {
  std::string cert_file, key_file, client_ca_file;
  EtcdTls client;  // what the fixture's own client presents
};

// One etcd for the whole suite; every test uses its own ledger name, so keys never meet. With `tls`, its client
// port is https:// and asks every client for a certificate of tls->client_ca_file.
class Etcd {
 public:
  std::string Start(const EtcdServerTls* tls = nullptr) {
    char tmpl[] = "/tmp/rackwise-ledger-etcd-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    const int client_port = FreeLoopbackPort(), peer_port = FreeLoopbackPort();
    endpoint_ = absl::StrCat(tls ? "https" : "http", "://127.0.0.1:", client_port);
    const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port);
    process_ = std::make_unique<ChildProcess>("etcd", dir_ + "/etcd.log");
    std::vector<std::string> argv = {kEtcd, "--name", "default", "--data-dir", dir_ + "/data"};
    argv.insert(argv.end(), {"--listen-client-urls", endpoint_, "--advertise-client-urls", endpoint_,
                             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster",
                             "default=" + peer, "--max-txn-ops", "1024"});
    if (tls)
      argv.insert(argv.end(), {"--cert-file", tls->cert_file, "--key-file", tls->key_file, "--trusted-ca-file",
                               tls->client_ca_file, "--client-cert-auth"});
    if (!process_->Spawn(argv)) return "cannot fork etcd";
    client_ = std::make_unique<EtcdClient>(endpoint_, 1000, tls ? tls->client : EtcdTls{});
    return WaitFor(
        "etcd /health", [this] { return client_->Health().ok(); }, {process_.get()}, milliseconds(30000));
  }
  void Stop() {
    process_.reset();
    if (!dir_.empty()) (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  const std::string& endpoint() const { return endpoint_; }
  EtcdClient& client() { return *client_; }
  ChildProcess* process() { return process_.get(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, endpoint_;
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<EtcdClient> client_;
};

struct Replica {
  std::string id;
  std::unique_ptr<ChildProcess> process;
  std::string address;  // HOST:PORT of its gRPC service
};

class LedgerEtcdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::access(kEtcd, X_OK) != 0) return;
    etcd_ = new Etcd;
    start_error_ = etcd_->Start();
  }
  static void TearDownTestSuite() {
    if (etcd_ != nullptr) etcd_->Stop();
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    if (::access(kEtcd, X_OK) != 0)
      GTEST_SKIP() << kEtcd << " is missing: install Debian's etcd-server (scripts/install-deps.sh does)";
    ASSERT_EQ(start_error_, "");
    name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  // Starts a replica of this test's ledger and waits until it serves gRPC (its address is in its log). Unless
  // replica_flags_ or `extra_flags` give an --access-file, the replica runs with --insecure-loopback (the tests of what
  // it does with its callers' identities give one).
  Replica* StartReplica(const std::string& id, const std::string& cluster = TwoRacks(),
                        const std::vector<std::string>& extra_flags = {}, const std::string& listen = "127.0.0.1:0") {
    auto r = std::make_unique<Replica>();
    r->id = id;
    r->process = std::make_unique<ChildProcess>(id, absl::StrCat(etcd_->dir(), "/", name_, "-", id, ".log"));
    Etcd* etcd = replica_etcd_ != nullptr ? replica_etcd_ : etcd_;
    std::vector<std::string> argv = {RACKWISE_LEDGER_BINARY,
                                     "--cluster",
                                     cluster,
                                     "--etcd",
                                     etcd->endpoint(),
                                     "--listen",
                                     listen,
                                     "--name",
                                     name_,
                                     "--replica-id",
                                     id,
                                     "--lease-ttl-s",
                                     std::to_string(kLeaseTtlS)};
    argv.insert(argv.end(), replica_flags_.begin(), replica_flags_.end());
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    if (std::find(argv.begin(), argv.end(), "--access-file") == argv.end()) argv.push_back("--insecure-loopback");
    EXPECT_TRUE(r->process->Spawn(argv));
    const std::string marker = "serving rackwise.v1.PowerLedger on ";
    std::string error = WaitFor(
        id + " listening",
        [&] {
          const std::string log = r->process->Log();
          const size_t at = log.find(marker);
          if (at == std::string::npos) return false;
          const size_t end = log.find(';', at);
          if (end == std::string::npos) return false;
          r->address = log.substr(at + marker.size(), end - at - marker.size());
          return true;
        },
        {r->process.get(), etcd->process()}, milliseconds(30000));
    EXPECT_EQ(error, "");
    replicas_.push_back(std::move(r));
    return replicas_.back().get();
  }

  std::optional<v1::StatusResponse> StatusOf(const Replica& r) const {
    LedgerClient client({r.address}, milliseconds(500), nullptr, token_);
    absl::StatusOr<v1::StatusResponse> s = client.Status();
    if (!s.ok()) return std::nullopt;
    return *s;
  }
  std::vector<ChildProcess*> Watched(const std::vector<Replica*>& replicas) {
    std::vector<ChildProcess*> out{(replica_etcd_ != nullptr ? replica_etcd_ : etcd_)->process()};
    for (Replica* r : replicas) out.push_back(r->process.get());
    return out;
  }
  // Waits until one of `replicas` serves as the leader; returns it.
  Replica* WaitForLeader(const std::vector<Replica*>& replicas, milliseconds bound = milliseconds(30000)) {
    Replica* leader = nullptr;
    std::string error = WaitFor(
        "a serving leader",
        [&] {
          for (Replica* r : replicas) {
            std::optional<v1::StatusResponse> s = StatusOf(*r);
            if (s && s->serving() && s->leader_id() == r->id) leader = r;
          }
          return leader != nullptr;
        },
        Watched(replicas), bound);
    EXPECT_EQ(error, "");
    return leader;
  }
  // Replicas "a" and "b" of this test's ledger, once one of them leads: {leader, follower}.
  std::pair<Replica*, Replica*> StartTwoReplicas() {
    Replica* a = StartReplica("a");
    Replica* b = StartReplica("b");
    Replica* leader = WaitForLeader({a, b});
    return {leader, leader == a ? b : a};
  }
  LedgerClient ClientOf(const std::vector<Replica*>& replicas) {
    std::vector<std::string> addresses;
    for (Replica* r : replicas) addresses.push_back(r->address);
    return LedgerClient(addresses, milliseconds(10000), nullptr, token_);
  }
  std::set<std::string> Owners(LedgerClient& client, const std::string& prefix = "") {
    std::set<std::string> out;
    absl::StatusOr<std::vector<v1::Allocation>> held = client.List(prefix);
    EXPECT_TRUE(held.ok()) << held.status();
    if (held.ok())
      for (const v1::Allocation& a : *held) out.insert(a.id());
    return out;
  }
  size_t StoredKeys() {
    absl::StatusOr<std::vector<EtcdKeyValue>> kvs = etcd_->client().GetPrefix(KeysOfLedger(name_).alloc_prefix);
    EXPECT_TRUE(kvs.ok()) << kvs.status();
    return kvs.ok() ? kvs->size() : 0;
  }

  // Creates this test's leader key with `value` as a replica winning the election would; its create_revision.
  int64_t ClaimLeaderKey(const std::string& value) {
    const LedgerKeys keys = KeysOfLedger(name_);
    const EtcdCompare vacant{.key = keys.leader, .create_revision = 0};
    const EtcdWrite claim{.key = keys.leader, .value = value};
    absl::StatusOr<EtcdTxnResult> won = etcd_->client().Txn({&vacant, 1}, {&claim, 1});
    EXPECT_TRUE(won.ok() && won->succeeded) << value;
    return won.ok() && won->succeeded ? won->revision : 0;
  }

  inline static Etcd* etcd_ = nullptr;
  inline static std::string start_error_;
  std::string name_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  // A test's own etcd for its replicas (null: the suite's), flags every replica gets, and the bearer token
  // StatusOf and ClientOf present ("": none).
  Etcd* replica_etcd_ = nullptr;
  std::vector<std::string> replica_flags_;
  std::string token_;
};

}  // namespace rackwise::ledger::testing
