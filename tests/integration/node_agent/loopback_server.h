// An HTTP server on a free loopback port, serving from its own thread for the life of the object: the stand-ins
// (API server, Prometheus) that tests of rackwise-node-agent answer from. Add routes through server() before
// Start().
#pragma once

#include <chrono>
#include <thread>

#include <httplib.h>

namespace rackwise::node_agent {

class LoopbackServer {
 public:
  ~LoopbackServer() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  void Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace rackwise::node_agent
