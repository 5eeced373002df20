// The real rackwise-extender binary as a child process, for tests that measure the process itself (peak
// memory) or its command line. Started on a free loopback port; the port is read from its log.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rackwise::k8s::testing {

class ExtenderProcess {
 public:
  ~ExtenderProcess() { Kill(); }

  // Starts `binary args...` with stderr into `log_path`; waits for "extender verbs on http(s)://host:PORT".
  // Returns "" on success, else why (the log included).
  std::string Start(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path) {
    log_path_ = log_path;
    pid_ = ::fork();
    if (pid_ == 0) {
      std::FILE* log = std::freopen(log_path.c_str(), "w", stderr);
      (void)log;
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      std::_Exit(127);
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "rackwise-extender exited at start-up:\n" + Log();
      }
      std::string log = Log();
      size_t at = log.find("extender verbs on ");
      if (at != std::string::npos && log.find('\n', at) != std::string::npos) {
        size_t colon = log.rfind(':', log.find('\n', at));
        port_ = std::stoi(log.substr(colon + 1));
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "rackwise-extender did not start listening within 60 s:\n" + Log();
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

  bool Alive() {
    int status = 0;
    return pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == 0;
  }
  // A field of /proc/<pid>/status in kB (VmHWM: peak resident memory), or -1.
  long StatusKb(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    return -1;
  }
  std::string Log() const {
    std::ifstream in(log_path_);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

}  // namespace rackwise::k8s::testing
