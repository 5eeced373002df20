// Child processes for tests that start real daemons (etcd, rackwise-ledger, rackwise-extender, the node agent),
// each with its stderr and stdout in a log file that a failing test prints, and the one way tests wait: on a
// state (a predicate polled every 10 ms until a bound), never a fixed sleep; a child that dies while a test
// waits on it ends the wait at once, with its log.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace rackwise::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

class ChildProcess {
 public:
  ChildProcess(std::string name, std::string log_path) : name_(std::move(name)), log_path_(std::move(log_path)) {}
  ~ChildProcess() { Signal(SIGKILL); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `argv[0]` with `argv`; false when fork fails.
  bool Spawn(const std::vector<std::string>& argv) {
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::_Exit(127);
    }
    return true;
  }
  // Whether it still runs (reaps it when it has ended).
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Sends `signal`; SIGKILL also waits for the end (a SIGTERM'd child is reaped by Running or the destructor).
  void Signal(int signal) {
    if (signal == SIGKILL) return SignalAndWait(signal);
    if (pid_ > 0) ::kill(pid_, signal);
  }
  // Sends `signal` and waits for the child to end.
  void SignalAndWait(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  std::string Log() const {
    std::ifstream in(log_path_);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string log_path_;
  pid_t pid_ = -1;
};

// Polls `ready` every 10 ms until it holds or `bound` passes: "" when it held, else why. `died`, asked between
// polls, names what has died (with its log) when something the test needs has: that ends the wait at once.
inline std::string WaitFor(const std::string& what, const std::function<bool()>& ready, std::chrono::milliseconds bound,
                           const std::function<std::string()>& died = nullptr) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (true) {
    if (ready()) return "";
    if (died) {
      if (std::string why = died(); !why.empty()) return "waiting for " + what + ": " + why;
    }
    if (std::chrono::steady_clock::now() >= until) {
      return "waiting for " + what + ": not within " + std::to_string(bound.count()) + " ms";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The same, watching child processes: one that dies ends the wait with its log, and a timeout shows every log.
inline std::string WaitFor(const std::string& what, const std::function<bool()>& ready,
                           const std::vector<ChildProcess*>& watched, std::chrono::milliseconds bound) {
  bool died = false;
  std::string why = WaitFor(what, ready, bound, [&]() -> std::string {
    for (ChildProcess* child : watched) {
      if (!child->Running()) {
        died = true;
        return child->name() + " died; its log:\n" + child->Log();
      }
    }
    return "";
  });
  if (why.empty() || died) return why;
  for (ChildProcess* child : watched) why += "\n--- " + child->name() + " log:\n" + child->Log();
  return why;
}

// WaitFor as a GoogleTest assertion, for ASSERT_TRUE(Eventually(...)): a failure prints why the state never came.
inline ::testing::AssertionResult Eventually(const std::function<bool()>& ready,
                                             std::chrono::milliseconds bound = std::chrono::seconds(60)) {
  const std::string why = WaitFor("the awaited state", ready, bound);
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

}  // namespace rackwise::testing
