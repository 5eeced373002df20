// A problem found in an input file, pointed at the place an administrator has to edit.
#pragma once

#include <string>
#include <vector>

namespace rackwise {

struct Diagnostic {
  std::string file;  // as the user named it
  int line = 0;      // 1-based; 0 when the problem has no single place (e.g. an empty file)
  std::string message;

  // "FILE:LINE: message" (or "FILE: message" when line is 0), the format `rackwise validate` prints.
  std::string ToString() const;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace rackwise
