// Diagnostic formatting: "FILE:LINE: message", the form editors and CI logs turn into links.
#include "rackwise/diagnostic.h"

#include "absl/strings/str_cat.h"

namespace rackwise {

std::string Diagnostic::ToString() const {
  if (line > 0) return absl::StrCat(file, ":", line, ": ", message);
  return absl::StrCat(file, ": ", message);
}

}  // namespace rackwise
