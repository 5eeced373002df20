// For tests: texts a user or a hostile client may give as watts per GPU (extremes, denormals, overflows, hex,
// units, blanks, and sane values). Every face that parses watts (the pod annotation, the Slurm option and
// environment) runs its parser over all of them, so that what one face refuses the others refuse too.
#pragma once

#include <array>

namespace rackwise::testing {

inline constexpr std::array<const char*, 24> kWattsTexts = {"0",
                                                            "0.001",
                                                            "4.9e-324",
                                                            "1e-310",
                                                            "-0",
                                                            "nan",
                                                            "inf",
                                                            "-inf",
                                                            "1e300",
                                                            "-5",
                                                            "1e17",
                                                            "9223372036854775807",
                                                            "18446744073709551616",
                                                            "99999999999999999999999999",
                                                            "1e999",
                                                            "10000.001",
                                                            "100000",
                                                            "0x10",
                                                            "700W",
                                                            " ",
                                                            "1",
                                                            "700",
                                                            " 450.5 ",
                                                            "10000"};

}  // namespace rackwise::testing
