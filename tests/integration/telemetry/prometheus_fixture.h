// A real Prometheus (Debian's `prometheus` binary) started by the test on a free loopback port, scraping a
// local page in the exact DCGM exporter text format (DCGM_FI_DEV_POWER_USAGE per GPU with gpu, UUID, device,
// modelName, Hostname and DCGM_FI_DRIVER_VERSION labels). The test sets each node's GPU watts, can stop the page
// (the exporter going away) and waits on states -- the target up, a query returning a value -- never on fixed
// sleeps. A Prometheus that dies fails the test at once with its log.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>

namespace rackwise::testing {

// The DCGM exporter page: node -> watts per GPU, `gpus` GPUs per node.
class DcgmExporterPage {
 public:
  DcgmExporterPage(int gpus_per_node) : gpus_(gpus_per_node) {}
  ~DcgmExporterPage() { Stop(); }
  void Start();
  void Stop();
  int port() const { return port_; }
  void SetGpuWatts(const std::string& node, double watts);
  std::string Render() const;

 private:
  int gpus_;
  mutable std::mutex mu_;
  std::map<std::string, double> watts_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

class PrometheusServer {
 public:
  ~PrometheusServer() { Stop(); }
  // Starts prometheus scraping 127.0.0.1:<target_port> every second; returns "" or why it could not start.
  std::string Start(int target_port);
  void Stop();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Waits until `promql` returns a vector whose first value satisfies `want`, up to `timeout_s`. Returns "" or a
  // description of the last answer (and the server's log if it died).
  std::string WaitForQuery(const std::string& promql, const std::function<bool(double)>& want, double timeout_s);
  // Waits until `promql` returns an empty vector.
  std::string WaitForEmpty(const std::string& promql, double timeout_s);
  // Empty while the process runs; else its exit and its log.
  std::string Died() const;
  std::string Log() const;

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rackwise::testing
