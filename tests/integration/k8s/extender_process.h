// The real rackwise-extender binary as a child process (rackwise/testing/child_process.h), for tests of the process
// itself (peak memory, command line, restarts). Started with port 0 (`--listen 127.0.0.1:0`, and `--grpc-listen
// 127.0.0.1:0` when it serves gRPC), the ports it bound are read from its log: no port is picked by the test and
// lost to another process.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "rackwise/testing/child_process.h"

namespace rackwise::k8s::testing {

class ExtenderProcess {
 public:
  ~ExtenderProcess() { Kill(); }

  // Starts `binary args...` with its output into `log_path` (emptied first: a restart's ports are read from its
  // own lines); waits for "extender verbs on http(s)://host:PORT" and, with a non-empty --grpc-listen among the
  // args, "gRPC rackwise.v1.Placement on port PORT". Returns "" on success, else why (the log included).
  std::string Start(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path) {
    Kill();
    std::ofstream(log_path, std::ios::trunc);
    child_ = std::make_unique<rackwise::testing::ChildProcess>("rackwise-extender", log_path);
    port_ = grpc_port_ = 0;
    const auto grpc_flag = std::find(args.begin(), args.end(), "--grpc-listen");
    const bool grpc = grpc_flag != args.end() && grpc_flag + 1 != args.end() && !grpc_flag[1].empty();
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!child_->Spawn(argv)) return "cannot fork for " + binary;
    return rackwise::testing::WaitFor(
        "rackwise-extender to listen",
        [&] {
          const std::string log = Log();
          if (port_ == 0) port_ = PortAfter(log, "extender verbs on ");
          if (grpc && grpc_port_ == 0) grpc_port_ = PortAfter(log, "gRPC rackwise.v1.Placement on port ");
          return port_ != 0 && (!grpc || grpc_port_ != 0);
        },
        {child_.get()}, std::chrono::seconds(60));
  }

  // Runs `binary args...` to completion; returns its exit status and fills *output with stdout+stderr.
  static int Run(const std::string& binary, const std::vector<std::string>& args, std::string* output) {
    std::string cmd = binary;
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " 2>&1";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return -1;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
    int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool Alive() { return child_ && child_->Running(); }
  // A field of /proc/<pid>/status in kB (VmHWM: peak resident memory), or -1.
  long StatusKb(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    return -1;
  }
  std::string Log() const { return child_ ? child_->Log() : ""; }
  void Kill() { Stop(SIGTERM); }
  // SIGKILL: the process ends where it is, nothing flushed on the way out (a crash, for restart tests).
  void Crash() { Stop(SIGKILL); }
  void Stop(int signal) {
    if (child_) child_->SignalAndWait(signal);
  }
  int port() const { return port_; }
  int grpc_port() const { return grpc_port_; }
  pid_t pid() const { return child_ ? child_->pid() : -1; }

 private:
  // The port the whole line starting with `marker` names: a URL's ("http://host:PORT") or the number right after
  // the marker ("on port PORT ..."); 0 before that line is written out.
  static int PortAfter(const std::string& log, const std::string& marker) {
    const size_t at = log.find(marker);
    if (at == std::string::npos) return 0;
    const size_t end = log.find('\n', at);
    if (end == std::string::npos) return 0;
    std::string rest = log.substr(at + marker.size(), end - at - marker.size());
    if (rest.find("://") != std::string::npos) rest = rest.substr(rest.rfind(':') + 1);
    return std::atoi(rest.c_str());
  }

  std::unique_ptr<rackwise::testing::ChildProcess> child_;
  int port_ = 0, grpc_port_ = 0;
};

}  // namespace rackwise::k8s::testing
