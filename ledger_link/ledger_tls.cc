// See ledger_tls.h.
#include "ledger_tls.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rackwise::ledger {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': cannot open (missing or unreadable)"));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': not a PEM file"));
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> LedgerChannelCredentials(const v1::LedgerTls& tls) {
  if (tls.ca_file().empty() && tls.cert_file().empty() && tls.key_file().empty())
    return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadPem(tls.ca_file(), "ledger tls ca_file");
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *std::move(ca);
  if (!tls.cert_file().empty() || !tls.key_file().empty()) {
    absl::StatusOr<std::string> cert = ReadPem(tls.cert_file(), "ledger tls cert_file");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(tls.key_file(), "ledger tls key_file");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LedgerServerCredentials(const std::string& cert_file,
                                                                                 const std::string& key_file,
                                                                                 const std::string& client_ca_file) {
  absl::StatusOr<std::string> cert = ReadPem(cert_file, "--tls-cert-file");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(key_file, "--tls-key-file");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  if (!client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(client_ca_file, "--tls-client-ca-file");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': cannot open (missing or unreadable)"));
  std::string line;
  std::getline(in, line);
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.size() < kMinLedgerTokenLength)
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': the token has ", token.size(),
                                                   " characters, at least ", kMinLedgerTokenLength,
                                                   " are needed (make one with `openssl rand -hex 32`)"));
  return token;
}

}  // namespace rackwise::ledger
