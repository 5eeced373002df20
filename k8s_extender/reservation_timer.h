// Releases expired gang reservations on a timer. Filter also expires them, but a cluster with no other
// traffic would otherwise keep an abandoned group's GPUs (and watts) booked until the next filter arrives.
// The timer wakes every period_ms, so a reservation goes at most one period after its deadline. Its beat also
// syncs the service with the shared power ledger, when there is one (ExtenderService::SyncSharedLedger), and saves
// the pods counted oversubscribed when they changed (ExtenderService::SaveOversubscribed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "extender_service.h"
#include "periodic_thread.h"

namespace rackwise::k8s {

class ReservationTimer {
 public:
  // `service` must outlive this; `now_ms` is the clock the service's deadlines use.
  ReservationTimer(ExtenderService* service, std::function<int64_t()> now_ms, int period_ms = 250);

  // Starts the thread (a second Start while it runs does nothing).
  void Start();
  // Stops and joins the thread. Safe twice.
  void Stop() { thread_.reset(); }

 private:
  ExtenderService* service_;
  std::function<int64_t()> now_ms_;
  const int period_ms_;
  std::unique_ptr<PeriodicThread> thread_;  // last: joined before the members above go
};

}  // namespace rackwise::k8s
