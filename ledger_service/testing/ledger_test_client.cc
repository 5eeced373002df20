// A tiny command-line client of rackwise-ledger for shell tests (tests/integration/slurm/test_shared_ledger.sh):
// another owner's reservation (Kubernetes, an operator) made through the real gRPC service, and the ledger's
// list of owners read back, without the extender. Not installed.
//
//   rackwise-ledger-test-client [--token-file FILE] ADDRESS[,ADDRESS...] reserve OWNER NODE:IDX[,IDX...] [NODE:...]
//   rackwise-ledger-test-client [--token-file FILE] ADDRESS[,ADDRESS...] release OWNER
//   rackwise-ledger-test-client [--token-file FILE] ADDRESS[,ADDRESS...] list [PREFIX]  (one "OWNER GPUS" line each)
//
// --token-file: the caller's bearer token (an identity of the ledger's access file); without it the client
// presents nothing, which only an --insecure-loopback replica answers.
// Exit status: 0 done, 2 the ledger refused (its reason on stderr: a cap, or PERMISSION_DENIED /
// UNAUTHENTICATED), 1 anything else (unreachable, bad usage).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "ledger_client.h"
#include "ledger_tls.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: rackwise-ledger-test-client [--token-file FILE] ADDRESSES reserve OWNER NODE:IDX[,IDX...]...\n"
               "       rackwise-ledger-test-client [--token-file FILE] ADDRESSES release OWNER\n"
               "       rackwise-ledger-test-client [--token-file FILE] ADDRESSES list [PREFIX]\n");
  return 1;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
  const absl::StatusCode code = s.code();
  return code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kPermissionDenied ||
                 code == absl::StatusCode::kUnauthenticated
             ? 2
             : 1;
}

int Reserve(rackwise::ledger::LedgerClient& client, int argc, char** argv) {
  rackwise::v1::Allocation allocation;
  allocation.set_id(argv[3]);
  for (int i = 4; i < argc; ++i) {
    std::vector<std::string> parts = absl::StrSplit(argv[i], ':');
    if (parts.size() != 2) return Usage();
    rackwise::v1::NodeGpus* node = allocation.add_nodes();
    node->set_node(parts[0]);
    for (absl::string_view idx : absl::StrSplit(parts[1], ',')) {
      uint32_t gpu = 0;
      if (!absl::SimpleAtoi(idx, &gpu)) return Usage();
      node->add_gpus(gpu);
    }
  }
  absl::Status s = client.Reserve(allocation);
  return s.ok() ? 0 : Fail(s);
}

}  // namespace

int main(int argc, char** argv) {
  std::string token;
  if (argc >= 3 && std::string(argv[1]) == "--token-file") {
    absl::StatusOr<std::string> read = rackwise::ledger::ReadTokenFile(argv[2], "--token-file");
    if (!read.ok()) return Fail(read.status());
    token = *std::move(read);
    argc -= 2;
    argv += 2;
  }
  if (argc < 3) return Usage();
  std::vector<std::string> addresses = absl::StrSplit(argv[1], ',', absl::SkipWhitespace());
  rackwise::ledger::LedgerClient client(addresses, std::chrono::milliseconds(5000), nullptr, token);
  const std::string verb = argv[2];
  if (verb == "reserve" && argc >= 5) return Reserve(client, argc, argv);
  if (verb == "release" && argc == 4) {
    absl::StatusOr<bool> released = client.Release(argv[3]);
    return released.ok() ? 0 : Fail(released.status());
  }
  if (verb == "list" && argc <= 4) {
    absl::StatusOr<std::vector<rackwise::v1::Allocation>> held = client.List(argc == 4 ? argv[3] : "");
    if (!held.ok()) return Fail(held.status());
    for (const rackwise::v1::Allocation& a : *held) {
      int gpus = 0;
      for (const rackwise::v1::NodeGpus& n : a.nodes()) gpus += n.gpus_size();
      std::printf("%s %d\n", a.id().c_str(), gpus);
    }
    return 0;
  }
  return Usage();
}
