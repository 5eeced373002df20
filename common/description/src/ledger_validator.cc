// The rules of the `ledger:` section. See ledger_validator.h; negative files in tests/data/invalid/ledger_*.
#include "ledger_validator.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rackwise/ledger_link_defaults.h"
#include "rackwise/ledger_owner.h"

namespace rackwise {
namespace {

// HOST:PORT: a host without spaces or control characters ("[::1]" for IPv6) and a port 1..65535. Empty: fine.
std::string AddressProblem(absl::string_view address) {
  if (address.empty()) return "is empty (a stray comma?)";
  for (char c : address)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return "has a space or a control character";
  if (address.find("://") != std::string_view::npos) return "must be HOST:PORT, without a scheme";
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return "has no port (HOST:PORT)";
  if (colon == 0) return "has no host";
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535)
    return "has a port that is not a number in 1..65535";
  return "";
}

class LedgerChecker {
 public:
  LedgerChecker(const v1::LedgerLink& l, const FieldPathLines& lines, std::string_view file, Diagnostics* out)
      : l_(l), lines_(lines), file_(file), out_(out) {}

  void Run() {
    CheckUrl();
    if (l_.has_tls()) CheckTls();
    if (l_.token_file().find_first_of(std::string_view("\0\n", 2)) != std::string::npos)
      Report("ledger.token_file", "ledger: token_file must not contain a NUL or a line break");
    if (!lines_.Rejected("ledger.deadline_ms") && (l_.deadline_ms() != 0 || lines_.Has("ledger.deadline_ms")) &&
        (l_.deadline_ms() < kMinLedgerDeadlineMs || l_.deadline_ms() > kMaxLedgerDeadlineMs)) {
      Report("ledger.deadline_ms",
             absl::StrCat("ledger: deadline_ms must be between ", kMinLedgerDeadlineMs, " and ", kMaxLedgerDeadlineMs,
                          " (a face must never stall), got ", l_.deadline_ms()));
    }
    CheckShares();
  }

 private:
  void Report(const std::string& path, std::string message) {
    out_->push_back({std::string(file_), lines_.Line(path), std::move(message)});
  }

  void CheckUrl() {
    if (lines_.Rejected("ledger.url")) return;
    if (absl::StripAsciiWhitespace(l_.url()).empty()) {
      Report("ledger", "ledger: missing 'url' (HOST:PORT of every replica, comma-separated)");
      return;
    }
    for (absl::string_view address : absl::StrSplit(l_.url(), ',')) {
      const absl::string_view trimmed = absl::StripAsciiWhitespace(address);
      if (std::string why = AddressProblem(trimmed); !why.empty())
        Report("ledger.url", absl::StrCat("ledger: url entry '", trimmed.substr(0, 200), "' ", why));
    }
  }

  void CheckTls() {
    const v1::LedgerTls& tls = l_.tls();
    if (tls.ca_file().empty() && !lines_.Rejected("ledger.tls.ca_file"))
      Report("ledger.tls", "ledger: tls: missing 'ca_file' (the CA that signed the replicas' certificates)");
    if (tls.cert_file().empty() != tls.key_file().empty())
      Report("ledger.tls", "ledger: tls: cert_file and key_file go together (both for mutual TLS, or neither)");
    for (const auto& [field, value] :
         {std::pair{"ca_file", &tls.ca_file()}, {"cert_file", &tls.cert_file()}, {"key_file", &tls.key_file()}}) {
      if (value->find_first_of(std::string_view("\0\n", 2)) != std::string::npos)
        Report(absl::StrCat("ledger.tls.", field),
               absl::StrCat("ledger: tls: ", field, " must not contain a NUL or a line break"));
    }
  }

  void CheckShares() {
    double sum = 0;
    std::vector<std::pair<std::string, int>> prefixes;  // the valid ones, with their index
    for (int i = 0; i < l_.shares_size(); ++i) {
      const v1::LedgerShare& share = l_.shares(i);
      const std::string p = absl::StrCat("ledger.shares[", i, "]");
      if (share.owner_prefix().empty()) {
        if (!lines_.Rejected(p + ".owner_prefix"))
          Report(p, absl::StrCat("ledger: shares[", i, "]: missing 'owner_prefix' (e.g. k8s/ or slurm/<cluster>/)"));
      } else if (absl::Status s = ledger::CheckOwnerPrefix(share.owner_prefix()); !s.ok()) {
        Report(p + ".owner_prefix", absl::StrCat("ledger: shares[", i, "]: ", s.message()));
      } else {
        CheckNotNested(share.owner_prefix(), i, prefixes);
        prefixes.emplace_back(share.owner_prefix(), i);
      }
      if (lines_.Rejected(p + ".static_share")) continue;
      if (!lines_.empty() && !lines_.Has(p + ".static_share")) {
        Report(p, absl::StrCat("ledger: shares[", i, "]: missing 'static_share' (0..1 of every budget)"));
      } else if (!std::isfinite(share.static_share()) || share.static_share() < 0 || share.static_share() > 1) {
        Report(p + ".static_share", absl::StrCat("ledger: shares[", i, "]: static_share must be between 0 and 1, got ",
                                                 share.static_share()));
      } else {
        sum += share.static_share();
      }
    }
    if (sum > 1)
      Report("ledger.shares", absl::StrCat("ledger: the static shares sum to ", sum,
                                           "; at most 1, or the owners' slices together would pass a cap"));
  }

  // Two prefixes one under the other ("slurm/" and "slurm/c1/") would give an owner two slices.
  void CheckNotNested(const std::string& prefix, int i, const std::vector<std::pair<std::string, int>>& earlier) {
    for (const auto& [other, j] : earlier) {
      if (!prefix.starts_with(other) && !other.starts_with(prefix)) continue;
      const std::string where = absl::StrCat("ledger: shares[", i, "]: owner_prefix '", prefix, "' ");
      Report(absl::StrCat("ledger.shares[", i, "].owner_prefix"),
             prefix == other ? absl::StrCat(where, "is listed twice (first in shares[", j, "])")
                             : absl::StrCat(where, "overlaps '", other, "' of shares[", j,
                                            "]: an owner under both would have two slices"));
      return;
    }
  }

  const v1::LedgerLink& l_;
  const FieldPathLines& lines_;
  std::string_view file_;
  Diagnostics* out_;
};

}  // namespace

void CheckLedgerLink(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                     Diagnostics* diagnostics) {
  if (!description.has_ledger()) return;
  LedgerChecker(description.ledger(), lines, file, diagnostics).Run();
}

}  // namespace rackwise
