// The defaults and bounds of a description's `ledger:` section, shared by its validator and the faces' link to
// the ledger (ledger_service/ledger_link.h), so that both read one number.
#pragma once

#include <cstdint>

namespace rackwise {

inline constexpr uint32_t kDefaultLedgerDeadlineMs = 200;  // a Reserve on loopback takes well under 1 ms
inline constexpr uint32_t kMinLedgerDeadlineMs = 10;
inline constexpr uint32_t kMaxLedgerDeadlineMs = 5000;  // a face holds its scheduler's lock during a call

}  // namespace rackwise
