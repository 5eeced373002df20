// Admission control for the HTTP front end, apart from sockets so that it can be tested alone.
//
// ConnectionSlots bounds the open connections. When all slots are taken, the connection idle the longest
// (waiting between requests) is shed to make room, since it costs its client only a reconnect; when none is
// idle, the newcomer is refused. So idle clients can never lock kube-scheduler out, and slow clients are
// bounded by the per-request deadline instead.
//
// BodyBudget bounds the request bytes held in memory at once (bodies being read, decoded and answered).
// A request whose body does not fit waits, first come first served, until earlier ones finish; it holds no
// thread while it waits. So N concurrent 50 MB bodies cost the budget, not N x 50 MB.
//
// Both are thread-safe; callbacks (Shed, grant) are called with no lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace rackwise::k8s {

// A connection that can be told to close (from any thread).
class Sheddable {
 public:
  virtual ~Sheddable() = default;
  virtual void Shed() = 0;
};

class ConnectionSlots {
 public:
  explicit ConnectionSlots(size_t max_connections) : max_(max_connections) {}

  // A slot id (> 0) for a new connection, or 0 when refused. May shed the longest-idle member first.
  uint64_t Admit(std::weak_ptr<Sheddable> connection);
  // Marks a member as waiting between requests (idle) or inside one. Idle members are shed first, oldest first.
  void SetIdle(uint64_t id, bool idle);
  // The member closed. Safe for ids already shed.
  void Leave(uint64_t id);

  size_t open() const;
  size_t idle() const;
  uint64_t shed() const;
  uint64_t refused() const;

 private:
  struct Member {
    std::weak_ptr<Sheddable> connection;
    uint64_t idle_since = 0;  // 0: busy; else a sequence number, smaller = idle longer
  };
  const size_t max_;
  mutable std::mutex mu_;
  std::map<uint64_t, Member> members_;
  uint64_t next_id_ = 1;
  uint64_t idle_seq_ = 1;
  uint64_t shed_ = 0, refused_ = 0;
};

class BodyBudget {
 public:
  explicit BodyBudget(size_t bytes) : capacity_(bytes) {}

  // Takes `bytes` (clamped to the capacity) now and returns true, or queues `grant` behind earlier waiters and
  // returns false; `grant` then runs (from a Release) once the bytes are taken for it. `ticket` names the wait.
  bool Acquire(size_t bytes, uint64_t ticket, std::function<void()> grant);
  // Gives up a queued wait. True if it was still queued (its grant will never run); false if already granted.
  bool Withdraw(uint64_t ticket);
  // Returns bytes taken by Acquire (the same amount as asked; clamping is undone here).
  void Release(size_t bytes);

  size_t in_use() const;
  size_t capacity() const { return capacity_; }
  size_t waiting() const;

 private:
  struct Waiter {
    uint64_t ticket;
    size_t bytes;
    std::function<void()> grant;
  };
  size_t Clamp(size_t bytes) const { return bytes < capacity_ ? bytes : capacity_; }

  const size_t capacity_;
  mutable std::mutex mu_;
  size_t in_use_ = 0;
  std::deque<Waiter> waiters_;
};

}  // namespace rackwise::k8s
