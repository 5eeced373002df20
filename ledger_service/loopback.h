// Whether a host names this machine only: what the ledger allows plain, unauthenticated traffic to (etcd over
// http://, --insecure-loopback's port).
#pragma once

#include <arpa/inet.h>

#include <string>

namespace rackwise::ledger {

// "localhost", "::1" (bracketed or not), or an IPv4 address in 127.0.0.0/8.
inline bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace rackwise::ledger
