// Kubeconfig and in-cluster credential loading (see kube_config.h).
#include "kube_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// A scalar under `key` of a YAML map, or "".
std::string Scalar(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) return "";
  YAML::Node v = node[key];
  if (!v || !v.IsScalar()) return "";
  return v.as<std::string>();
}

// Finds the entry named `name` in a kubeconfig list ("clusters", "users", "contexts") and returns its body.
YAML::Node Named(const YAML::Node& root, const char* list, const char* body, const std::string& name) {
  YAML::Node items = root[list];
  if (!items || !items.IsSequence()) return YAML::Node();
  for (const YAML::Node& item : items) {
    if (item.IsMap() && Scalar(item, "name") == name) return item[body];
  }
  return YAML::Node();
}

// `<key>-data` (base64) or `<key>` (a file path).
absl::StatusOr<std::string> DataOrFile(const YAML::Node& node, const std::string& key, const std::string& dir,
                                       const std::string& where) {
  std::string data = Scalar(node, (key + "-data").c_str());
  if (!data.empty()) {
    std::string out;
    if (!absl::Base64Unescape(data, &out)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", key, "-data is not valid base64"));
    }
    return out;
  }
  std::string file = Scalar(node, key.c_str());
  if (file.empty()) return std::string();
  return ReadFile(Resolve(dir, file));
}

}  // namespace

std::string KubeConfig::CurrentToken() const {
  if (!token_file.empty()) {
    absl::StatusOr<std::string> t = ReadFile(token_file);
    if (t.ok()) return std::string(absl::StripAsciiWhitespace(*t));
  }
  return token;
}

absl::Status ParseServerUrl(const std::string& url, KubeConfig* config) {
  absl::string_view rest = url;
  if (rest.rfind("https://", 0) == 0) {
    config->https = true;
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    config->https = false;
    rest.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("server \"", url, "\": expected http:// or https://"));
  }
  size_t slash = rest.find('/');
  absl::string_view hostport = rest.substr(0, slash);
  config->base_path = slash == absl::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!config->base_path.empty() && config->base_path.back() == '/') config->base_path.pop_back();
  config->port = config->https ? 443 : 80;
  absl::string_view port_text;
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    if (close == absl::string_view::npos)
      return absl::InvalidArgumentError(absl::StrCat("server \"", url, "\": bad IPv6 host"));
    config->host = std::string(hostport.substr(1, close - 1));
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port_text = hostport.substr(close + 2);
  } else {
    size_t colon = hostport.rfind(':');
    config->host = std::string(hostport.substr(0, colon));
    if (colon != absl::string_view::npos) port_text = hostport.substr(colon + 1);
  }
  if (config->host.empty()) return absl::InvalidArgumentError(absl::StrCat("server \"", url, "\": no host"));
  if (!port_text.empty()) {
    int p = 0;
    if (!absl::SimpleAtoi(port_text, &p) || p < 1 || p > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("server \"", url, "\": bad port"));
    }
    config->port = p;
  }
  return absl::OkStatus();
}

absl::StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context_name) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  try {
    std::string ctx = context_name.empty() ? Scalar(root, "current-context") : context_name;
    if (ctx.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no current-context"));
    YAML::Node context = Named(root, "contexts", "context", ctx);
    if (!context) return absl::InvalidArgumentError(absl::StrCat(path, ": context \"", ctx, "\" not found"));
    std::string cluster_name = Scalar(context, "cluster"), user_name = Scalar(context, "user");
    YAML::Node cluster = Named(root, "clusters", "cluster", cluster_name);
    if (!cluster) return absl::InvalidArgumentError(absl::StrCat(path, ": cluster \"", cluster_name, "\" not found"));
    KubeConfig config;
    config.source = path;
    if (absl::Status s = ParseServerUrl(Scalar(cluster, "server"), &config); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": cluster \"", cluster_name, "\": ", s.message()));
    }
    config.insecure_skip_verify = Scalar(cluster, "insecure-skip-tls-verify") == "true";
    absl::StatusOr<std::string> ca = DataOrFile(cluster, "certificate-authority", dir, path);
    if (!ca.ok()) return ca.status();
    config.ca_pem = *ca;
    YAML::Node user = Named(root, "users", "user", user_name);
    if (user && user.IsMap()) {
      if (user["exec"] || user["auth-provider"]) {
        return absl::UnimplementedError(absl::StrCat(path, ": user \"", user_name,
                                                     "\" uses an exec or auth-provider plugin, which rackwise-extender "
                                                     "does not run; use a token or client certificate"));
      }
      config.token = Scalar(user, "token");
      if (std::string f = Scalar(user, "tokenFile"); !f.empty()) config.token_file = Resolve(dir, f);
      absl::StatusOr<std::string> cert = DataOrFile(user, "client-certificate", dir, path);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = DataOrFile(user, "client-key", dir, path);
      if (!key.ok()) return key.status();
      config.client_cert_pem = *cert;
      config.client_key_pem = *key;
      if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": user \"", user_name, "\": a client certificate needs its key and vice versa"));
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
}

absl::StatusOr<std::optional<KubeConfig>> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') return std::optional<KubeConfig>();
  const std::string token_file = sa_dir + "/token";
  if (!std::filesystem::exists(token_file)) return std::optional<KubeConfig>();
  KubeConfig config;
  config.source = "in-cluster";
  std::string h = host;
  std::string url = absl::StrCat("https://", h.find(':') != std::string::npos ? "[" + h + "]" : h, ":", port);
  if (absl::Status s = ParseServerUrl(url, &config); !s.ok()) return s;
  config.token_file = token_file;
  absl::StatusOr<std::string> ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca.ok()) return ca.status();
  config.ca_pem = *ca;
  return std::optional<KubeConfig>(std::move(config));
}

absl::StatusOr<std::optional<KubeConfig>> ResolveKubeConfig(const std::string& kubeconfig_path) {
  if (!kubeconfig_path.empty()) {
    absl::StatusOr<KubeConfig> c = LoadKubeconfig(kubeconfig_path);
    if (!c.ok()) return c.status();
    return std::optional<KubeConfig>(std::move(*c));
  }
  return InClusterConfig();
}

}  // namespace rackwise::k8s
