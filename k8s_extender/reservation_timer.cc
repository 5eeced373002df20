// The background thread behind ReservationTimer (see reservation_timer.h).
#include "reservation_timer.h"

#include <chrono>

namespace rackwise::k8s {

ReservationTimer::ReservationTimer(ExtenderService* service, std::function<int64_t()> now_ms, int period_ms)
    : service_(service), now_ms_(std::move(now_ms)), period_ms_(period_ms) {}

ReservationTimer::~ReservationTimer() { Stop(); }

void ReservationTimer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void ReservationTimer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReservationTimer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(period_ms_), [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    service_->ExpireReservations(now_ms_());
    service_->SyncSharedLedger(now_ms_());  // rate-limited inside; nothing without a shared ledger
    lock.lock();
  }
}

}  // namespace rackwise::k8s
