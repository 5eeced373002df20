// Certificates for the ledger's TLS and access tests, made at test time with the openssl CLI in a fresh
// directory: two CAs ("ca", trusted, and "other", trusted by nobody), a server certificate for 127.0.0.1 and
// localhost signed by ca, and client certificates `<name>.pem`/`<name>.key` with CN <name> and the SAN
// DNS:<name>.clients.test signed by ca, plus "stranger" (CN slurmctld-c1, like a real face's) signed by the
// other CA.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rackwise::ledger::testing {

class TestCertificates {
 public:
  // Makes the directory and every certificate; ok() says whether openssl succeeded (see its log in dir()).
  explicit TestCertificates(const std::vector<std::string>& clients) {
    char dir_template[] = "/tmp/rackwise-ledger-certs-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) return;
    dir_ = dir_template;
    std::string script = "set -e; cd " + dir_ +
                         "; exec >openssl.log 2>&1;"
                         " for ca in ca other; do openssl req -x509 -newkey rsa:2048 -nodes -keyout $ca.key"
                         "   -out $ca.pem -days 1 -subj /CN=rackwise-test-$ca; done;"
                         " sign() { printf \"subjectAltName=$4\" > $1.ext;"
                         "   openssl req -newkey rsa:2048 -nodes -keyout $1.key -out $1.csr -subj /CN=$2;"
                         "   openssl x509 -req -in $1.csr -CA $3.pem -CAkey $3.key -CAcreateserial -out $1.pem -days 1"
                         "   -extfile $1.ext; };"
                         " sign server server ca IP:127.0.0.1,DNS:localhost;"
                         " sign stranger slurmctld-c1 other DNS:slurmctld-c1.clients.test;";
    for (const std::string& client : clients)
      script += " sign " + client + " " + client + " ca DNS:" + client + ".clients.test;";
    std::ofstream(File("make-certs.sh")) << script << "\n";
    ok_ = std::system(("bash " + File("make-certs.sh")).c_str()) == 0;
  }
  ~TestCertificates() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace rackwise::ledger::testing
