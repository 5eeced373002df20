// See rackwise/static_share.h. The arithmetic is the split simulator's, moved here unchanged (its figures must
// not move): doubles where it used them, floors where it rounded.
#include "rackwise/static_share.h"

#include <algorithm>
#include <cmath>

namespace rackwise {

Milliwatts ShareBudget(Milliwatts cap, Milliwatts idle, double reserve_fraction) {
  return std::max<Milliwatts>(0, UsableCap(cap, reserve_fraction) - idle);
}

Milliwatts ShareSlice(Milliwatts budget, double share) {
  return static_cast<Milliwatts>(std::floor(share * static_cast<double>(budget)));
}

Milliwatts CapForUsable(Milliwatts usable, double reserve_fraction) {
  return static_cast<Milliwatts>(std::floor(static_cast<double>(usable) / (1 - reserve_fraction)));
}

Milliwatts StaticShareCap(Milliwatts cap, Milliwatts idle, double share, double reserve_fraction) {
  return CapForUsable(idle + ShareSlice(ShareBudget(cap, idle, reserve_fraction), share), reserve_fraction);
}

}  // namespace rackwise
