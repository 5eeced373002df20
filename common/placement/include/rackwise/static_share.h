// Static shares of power budgets. A budget is what work may add under one cap: the usable cap (the cap less the
// policy's reserve) less the idle draw below it. An owner with share K of a budget b may add floor(K x b) above
// idle; a ledger given StaticShareCap as its cap lets it add no more, as the placer reads caps (usable part of
// the cap, less the idle draw it counts). The split simulator's static mode and the shared ledger's guaranteed
// slices (guaranteed_slices.h) both use this arithmetic, so the fallback of a face and the simulator's static
// split are the same thing. Pure functions.
#pragma once

#include "rackwise/topology.h"

namespace rackwise {

// The usable cap less idle; never negative (idle above the usable cap leaves nothing to add).
Milliwatts ShareBudget(Milliwatts cap, Milliwatts idle, double reserve_fraction);

// share x budget, rounded down: slices whose shares sum to at most 1 fit in the budget together.
Milliwatts ShareSlice(Milliwatts budget, double share);

// The largest cap whose usable part (UsableCap) is at most `usable`: rounded down, so that what an owner may add
// never exceeds what it was given.
Milliwatts CapForUsable(Milliwatts usable, double reserve_fraction);

// The cap under which a ledger lets an owner add at most `share` of the budget above idle.
Milliwatts StaticShareCap(Milliwatts cap, Milliwatts idle, double share, double reserve_fraction);

}  // namespace rackwise
