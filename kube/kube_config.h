// Where the API server is and how to authenticate to it: in-cluster service-account credentials
// (KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}) or a
// kubeconfig file (current context: server, certificate-authority[-data], insecure-skip-tls-verify, token,
// tokenFile, client-certificate[-data], client-key[-data]). Exec and auth-provider plugins are not supported
// and say so. With neither, the extender runs standalone.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace rackwise::k8s {

struct KubeConfig {
  std::string source;  // "in-cluster" or the kubeconfig path, for logs
  bool https = true;
  std::string host;
  int port = 443;
  std::string base_path;        // a server URL may carry a path prefix ("https://h/k8s")
  std::string token;            // bearer token ...
  std::string token_file;       // ... or a file re-read on every connection (rotated service-account tokens)
  std::string ca_pem;           // trusted CA bundle (PEM); empty: the system store
  std::string client_cert_pem;  // client certificate authentication
  std::string client_key_pem;
  bool insecure_skip_verify = false;

  // The token to send now ("" for none); re-reads token_file.
  std::string CurrentToken() const;
};

// Parses "https://host:port/path" (IPv6 hosts in brackets). Default ports 443/80.
absl::Status ParseServerUrl(const std::string& url, KubeConfig* config);

// Reads a kubeconfig (YAML). Relative file paths inside it are relative to the kubeconfig's directory.
absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// In-cluster configuration from the environment and `sa_dir` (normally
// /var/run/secrets/kubernetes.io/serviceaccount). nullopt when not running in a pod.
absl::StatusOr<std::optional<KubeConfig>> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// --kubeconfig wins; else in-cluster; else nullopt (standalone).
absl::StatusOr<std::optional<KubeConfig>> ResolveKubeConfig(const std::string& kubeconfig_path);

// The whole file (certificates, tokens, kubeconfigs); NotFound naming the path when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace rackwise::k8s
