// Connection slots with idle-first shedding, and the in-flight body budget (see http_admission.h).
#include "http_admission.h"

#include <vector>

namespace rackwise::k8s {

uint64_t ConnectionSlots::Admit(std::weak_ptr<Sheddable> connection) {
  std::shared_ptr<Sheddable> victim;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (members_.size() >= max_) {
      auto oldest = members_.end();
      for (auto it = members_.begin(); it != members_.end(); ++it) {
        if (it->second.idle_since != 0 &&
            (oldest == members_.end() || it->second.idle_since < oldest->second.idle_since)) {
          oldest = it;
        }
      }
      if (oldest == members_.end()) {
        ++refused_;
        return 0;
      }
      victim = oldest->second.connection.lock();
      members_.erase(oldest);  // its slot is free now; its Leave later is a no-op
      ++shed_;
    }
    id = next_id_++;
    members_.emplace(id, Member{std::move(connection), 0});
  }
  if (victim) victim->Shed();
  return id;
}

void ConnectionSlots::SetIdle(uint64_t id, bool idle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it != members_.end()) it->second.idle_since = idle ? idle_seq_++ : 0;
}

void ConnectionSlots::Leave(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  members_.erase(id);
}

size_t ConnectionSlots::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return members_.size();
}

size_t ConnectionSlots::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, member] : members_) n += member.idle_since != 0;
  return n;
}

uint64_t ConnectionSlots::shed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shed_;
}

uint64_t ConnectionSlots::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

bool BodyBudget::Acquire(size_t bytes, uint64_t ticket, std::function<void()> grant) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t need = Clamp(bytes);
  if (waiters_.empty() && in_use_ + need <= capacity_) {
    in_use_ += need;
    return true;
  }
  waiters_.push_back(Waiter{ticket, need, std::move(grant)});
  return false;
}

bool BodyBudget::Withdraw(uint64_t ticket) {
  std::function<void()> dropped;  // destroyed after the lock: it may own the last reference to its caller
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->ticket == ticket) {
      dropped = std::move(it->grant);
      waiters_.erase(it);
      return true;
    }
  }
  return false;
}

void BodyBudget::Release(size_t bytes) {
  std::vector<std::function<void()>> granted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t give_back = Clamp(bytes);
    in_use_ = give_back > in_use_ ? 0 : in_use_ - give_back;
    // First come, first served: a large waiter at the head is not overtaken by smaller ones behind it.
    while (!waiters_.empty() && in_use_ + waiters_.front().bytes <= capacity_) {
      in_use_ += waiters_.front().bytes;
      granted.push_back(std::move(waiters_.front().grant));
      waiters_.pop_front();
    }
  }
  for (auto& grant : granted) grant();
}

size_t BodyBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t BodyBudget::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

}  // namespace rackwise::k8s
