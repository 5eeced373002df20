// Files a node keeps for rackwise (lease state, the last description it accepted): their directories, created
// with their parents and checked before use, and whole-file writes that readers never see half done.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rackwise::node_power {

// Creates `dir` and any missing parent (like mkdir -p; created levels get mode 0755), then checks that what is
// there is a directory this process may trust: owned by root or by this process's user (root in slurmd), and
// not writable by every user (anyone could otherwise swap the files rackwise restores limits from). Safe when
// several processes create the same directory at once. The error names the directory and what is wrong with it.
absl::Status MakeTrustedDirectory(const std::string& dir);

// Replaces `path` with `text`: written to a temporary file of this process beside it, fsync'ed, renamed over
// `path`, then the directory fsync'ed. A reader (or a crash) sees the old file or the new one, never a torn one,
// and processes writing the same path at once do not disturb each other (the last rename wins).
absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode);

// The whole of `path`; NotFound when it does not exist.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// "/a/b" for "/a/b/c", "." for "c".
std::string DirectoryOf(const std::string& path);

}  // namespace rackwise::node_power
