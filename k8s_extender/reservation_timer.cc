// The background thread behind ReservationTimer (see reservation_timer.h).
#include "reservation_timer.h"

#include <chrono>

namespace rackwise::k8s {

ReservationTimer::ReservationTimer(ExtenderService* service, std::function<int64_t()> now_ms, int period_ms)
    : service_(service), now_ms_(std::move(now_ms)), period_ms_(period_ms) {}

void ReservationTimer::Start() {
  if (thread_) return;
  const std::chrono::milliseconds period(period_ms_);
  thread_ = std::make_unique<PeriodicThread>(
      [this, period] {
        service_->ExpireReservations(now_ms_());
        service_->SyncSharedLedger(now_ms_());  // rate-limited inside; nothing without a shared ledger
        service_->SaveOversubscribed();         // only when pods counted oversubscribed came or went
        return period;
      },
      PeriodicThread::FirstBeat::kAfterWait, period);
}

}  // namespace rackwise::k8s
