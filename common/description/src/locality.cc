// See locality.h.
#include "rackwise/locality.h"

#include <cctype>
#include <string>

namespace rackwise {

std::optional<Locality> ParseLocality(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "required") return Locality::kRequired;
  if (lower == "preferred") return Locality::kPreferred;
  if (lower == "none") return Locality::kNone;
  return std::nullopt;
}

const char* LocalityName(Locality locality) {
  switch (locality) {
    case Locality::kRequired: return "required";
    case Locality::kPreferred: return "preferred";
    case Locality::kNone: return "none";
  }
  return "preferred";
}

}  // namespace rackwise
