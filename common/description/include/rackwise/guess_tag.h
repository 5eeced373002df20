// The YAML tag `rackwise import` puts on every figure it had to guess (`gpu_watts: !guess 700`). A description
// holding one is refused, each at its line, until the administrator writes the real value without the tag.
#pragma once

namespace rackwise {

inline constexpr char kGuessTag[] = "!guess";

}  // namespace rackwise
