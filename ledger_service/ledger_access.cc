// See ledger_access.h.
#include "ledger_access.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ledger_tls.h"
#include "rackwise/ledger_owner.h"
#include "yaml-cpp/yaml.h"

namespace rackwise::ledger {
namespace {

constexpr char kAnonymous[] = "anonymous";

std::array<unsigned char, 32> Sha256(absl::string_view text) {
  std::array<unsigned char, 32> out{};
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr);
  return out;
}

// An identity's name goes into log lines and metric labels: letters, digits and . _ - @ : only.
bool ValidName(absl::string_view name) {
  if (name.empty() || name.size() > 128 || name == kAnonymous) return false;
  for (char c : name)
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != '@' && c != ':') return false;
  return true;
}

// Parses one file; every error names the file and the line.
class AccessFileParser {
 public:
  explicit AccessFileParser(const std::string& path) : path_(path) {}

  absl::StatusOr<std::vector<LedgerIdentity>> Parse(const YAML::Node& root) {
    if (!root.IsMap()) return Error(root, "must be a map with 'identities:'");
    for (const auto& entry : root) {
      if (entry.first.as<std::string>() != "identities")
        return Error(entry.first, absl::StrCat("unknown key '", entry.first.as<std::string>(), "'"));
    }
    const YAML::Node list = root["identities"];
    if (!list || !list.IsSequence() || list.size() == 0)
      return Error(root, "'identities' must be a non-empty list (nobody could call the ledger)");
    std::vector<LedgerIdentity> out;
    for (const YAML::Node& node : list) {
      absl::StatusOr<LedgerIdentity> identity = ParseIdentity(node);
      if (!identity.ok()) return identity.status();
      if (absl::Status s = CheckUnique(node, *identity); !s.ok()) return s;
      out.push_back(*std::move(identity));
    }
    return out;
  }

 private:
  absl::Status Error(const YAML::Node& at, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ":", at.Mark().line + 1, ": ", what));
  }

  absl::StatusOr<std::vector<std::string>> Strings(const YAML::Node& node, absl::string_view key) const {
    if (!node.IsSequence()) return Error(node, absl::StrCat("'", key, "' must be a list"));
    std::vector<std::string> out;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return Error(item, absl::StrCat("'", key, "' entries must be strings"));
      out.push_back(item.as<std::string>());
    }
    return out;
  }

  absl::StatusOr<LedgerIdentity> ParseIdentity(const YAML::Node& node) {
    if (!node.IsMap()) return Error(node, "an identity must be a map (name, write, token_file, cert_names)");
    LedgerIdentity identity;
    bool names_given = false;
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      absl::Status s;
      if (key == "name" && value.IsScalar()) {
        identity.name = value.as<std::string>();
      } else if (key == "write") {
        absl::StatusOr<std::vector<std::string>> write = Strings(value, key);
        s = write.ok() ? CheckPrefixes(value, *write) : write.status();
        if (s.ok()) identity.write = *std::move(write);
      } else if (key == "cert_names") {
        absl::StatusOr<std::vector<std::string>> names = Strings(value, key);
        s = names.status();
        if (s.ok()) identity.cert_names = *std::move(names);
        names_given = true;
      } else if (key == "token_file" && value.IsScalar()) {
        s = ReadToken(value, &identity);
      } else {
        s = Error(entry.first, absl::StrCat("unknown key or wrong type: '", key, "'"));
      }
      if (!s.ok()) return s;
    }
    if (!ValidName(identity.name))
      return Error(node, absl::StrCat("identity name '", absl::CHexEscape(identity.name),
                                      "' must be 1..128 of [A-Za-z0-9._@:-] (and not 'anonymous')"));
    if (!names_given) identity.cert_names = {identity.name};
    return identity;
  }

  absl::Status CheckPrefixes(const YAML::Node& node, const std::vector<std::string>& prefixes) const {
    for (const std::string& p : prefixes) {
      if (absl::Status s = CheckOwnerPrefix(p); !s.ok()) return Error(node, absl::StrCat("write: ", s.message()));
    }
    return absl::OkStatus();
  }

  absl::Status ReadToken(const YAML::Node& value, LedgerIdentity* identity) const {
    absl::StatusOr<std::string> token = ReadTokenFile(value.as<std::string>(), "token_file");
    if (!token.ok()) return Error(value, token.status().message());
    identity->has_token = true;
    identity->token_digest = Sha256(*token);
    return absl::OkStatus();
  }

  absl::Status CheckUnique(const YAML::Node& node, const LedgerIdentity& identity) {
    if (!names_.insert(identity.name).second)
      return Error(node, absl::StrCat("identity '", identity.name, "' is listed twice"));
    for (const std::string& cert_name : identity.cert_names) {
      if (!cert_names_.insert(cert_name).second)
        return Error(node, absl::StrCat("certificate name '", cert_name, "' is given to two identities"));
    }
    if (identity.has_token && !tokens_.insert(identity.token_digest).second)
      return Error(node, absl::StrCat("identity '", identity.name, "' has the token of another identity"));
    return absl::OkStatus();
  }

  const std::string& path_;
  std::set<std::string> names_, cert_names_;
  std::set<std::array<unsigned char, 32>> tokens_;
};

}  // namespace

absl::StatusOr<LedgerAccess> LedgerAccess::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("access file '", path, "': cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<LedgerAccess> LedgerAccess::Parse(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
  absl::StatusOr<std::vector<LedgerIdentity>> identities;
  try {
    identities = AccessFileParser(path).Parse(root);
  } catch (const YAML::Exception& e) {  // a key that is not a scalar, and the like
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
  if (!identities.ok()) return identities.status();
  LedgerAccess access;
  access.identities_ = *std::move(identities);
  return access;
}

void LedgerAccess::AllowAnonymous() {
  anonymous_ = true;
  anonymous_identity_.name = kAnonymous;
  anonymous_identity_.writes_everything = true;
}

const LedgerIdentity* LedgerAccess::ByToken(absl::string_view token) const {
  const std::array<unsigned char, 32> digest = Sha256(token);
  const LedgerIdentity* found = nullptr;
  for (const LedgerIdentity& identity : identities_) {
    // Every identity is compared, whatever matched before: the time taken says nothing of which one matched.
    const bool same = identity.has_token && CRYPTO_memcmp(identity.token_digest.data(), digest.data(), 32) == 0;
    if (same) found = &identity;
  }
  return found;
}

const LedgerIdentity* LedgerAccess::ByCertificate(const std::vector<std::string>& names) const {
  for (const LedgerIdentity& identity : identities_) {
    for (const std::string& name : names) {
      for (const std::string& mine : identity.cert_names)
        if (name == mine) return &identity;
    }
  }
  return nullptr;
}

absl::StatusOr<const LedgerIdentity*> LedgerAccess::Authenticate(const PeerCredentials& peer) const {
  const LedgerIdentity* by_token = nullptr;
  if (!peer.authorization.empty()) {
    constexpr absl::string_view kBearer = "Bearer ";
    const absl::string_view value = peer.authorization;
    if (!absl::StartsWithIgnoreCase(value, kBearer))
      return absl::UnauthenticatedError("the authorization metadata is not 'Bearer <token>'");
    by_token = ByToken(absl::StripAsciiWhitespace(value.substr(kBearer.size())));
    if (by_token == nullptr)
      return absl::UnauthenticatedError("the bearer token is no identity's in the ledger's access file");
  }
  const LedgerIdentity* by_cert = peer.cert_names.empty() ? nullptr : ByCertificate(peer.cert_names);
  if (by_token != nullptr && by_cert != nullptr && by_token != by_cert)
    return absl::UnauthenticatedError(absl::StrCat("the bearer token is identity '", by_token->name,
                                                   "' but the client certificate is '", by_cert->name, "'"));
  if (by_token != nullptr) return by_token;
  if (by_cert != nullptr) return by_cert;
  if (!peer.cert_names.empty())
    return absl::UnauthenticatedError(absl::StrCat("the client certificate (",
                                                   absl::CHexEscape(absl::StrJoin(peer.cert_names, ", ")),
                                                   ") names no identity of the ledger's access file"));
  if (anonymous_) return &anonymous_identity_;
  return absl::UnauthenticatedError(
      "no credentials: the ledger needs a client certificate or 'authorization: Bearer <token>'");
}

absl::Status LedgerAccess::AuthorizeWrite(const LedgerIdentity& who, absl::string_view verb, absl::string_view owner) {
  if (who.writes_everything) return absl::OkStatus();
  for (const std::string& prefix : who.write)
    if (absl::StartsWith(owner, prefix)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "identity '", who.name, "' may not ", verb, " '", absl::CHexEscape(owner.substr(0, 200)), "': it writes ",
      who.write.empty() ? "nothing" : absl::StrCat("only under ", absl::StrJoin(who.write, ", "))));
}

std::string LedgerAccess::Describe() const {
  int with_token = 0;
  std::vector<std::string> lines;
  for (const LedgerIdentity& identity : identities_) {
    with_token += identity.has_token;
    lines.push_back(absl::StrCat(identity.name, " writes ",
                                 identity.write.empty() ? "nothing" : absl::StrJoin(identity.write, " ")));
  }
  return absl::StrCat(identities_.size(), " identities (", with_token, " with a token): ", absl::StrJoin(lines, "; "),
                      anonymous_ ? "; INSECURE: callers without credentials write anything" : "");
}

}  // namespace rackwise::ledger
