// Slurm's configuration file syntax (slurm.conf, gres.conf, topology.conf), read the way Slurm reads it:
// `Key=Value` pairs separated by blanks, keys case-insensitive, `#` starts a comment (`\#` does not), a line
// ending in `\` continues on the next, values may be double-quoted. Only the syntax: what the keys mean is the
// importer's business.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rackwise/diagnostic.h"

namespace rackwise::adopt {

struct SlurmConfigLine {
  int line = 0;                                            // where the (first physical) line starts, 1-based
  std::vector<std::pair<std::string, std::string>> pairs;  // keys lower-cased, in order

  // The value of `key` (lower case), if the line has it.
  std::optional<std::string> Get(std::string_view key) const;
  // The lower-cased key of the first pair: what the line declares (nodename, partitionname, switchname, ...).
  std::string Kind() const { return pairs.empty() ? std::string() : pairs.front().first; }
};

// Splits `text` into logical lines. A token without `=` or an unterminated quote is a diagnostic (FILE:LINE)
// and the token is skipped; blank and comment-only lines are left out.
std::vector<SlurmConfigLine> ParseSlurmConfig(std::string_view text, std::string_view file, Diagnostics* diagnostics);

}  // namespace rackwise::adopt
