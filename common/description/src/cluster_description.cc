// Reading, checking and writing cluster descriptions and state files: YAML text -> protobuf (yaml_stream for
// both), then the semantic rules (description_validator, state_validator).
// Nothing thrown inside escapes.
#include "rackwise/cluster_description.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "description_validator.h"
#include "field_path_lines.h"
#include "proto_to_yaml.h"
#include "state_validator.h"
#include "yaml_stream.h"

namespace rackwise {
namespace {

// Aliases may make a document read at most this many events, in proportion to its text (a guard against "billion
// laughs").
size_t MaxYamlEvents(std::string_view yaml) { return 50'000 + 20 * yaml.size(); }
constexpr size_t kMaxDiagnostics = 1000;

absl::Status FirstProblem(const Diagnostics& diagnostics, size_t from) {
  return absl::InvalidArgumentError(diagnostics.size() > from ? diagnostics[from].ToString() : "invalid input");
}

// Reads a whole file; a missing or unreadable one becomes a diagnostic.
std::optional<std::string> ReadFile(const std::string& path, Diagnostics* diagnostics) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    diagnostics->push_back({path, 0, "is a directory, not a YAML file"});
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diagnostics->push_back({path, 0, "cannot open the file (missing or unreadable)"});
    return std::nullopt;
  }
  // Reserved to the file's size and read in large blocks: a 10 MB state file through a stringstream cost
  // several copies and reallocations. Files without a size (pipes) just grow.
  std::string text;
  if (uintmax_t size = std::filesystem::file_size(path, ec); !ec) text.reserve(size);
  std::vector<char> block(1 << 16);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    diagnostics->push_back({path, 0, "cannot read the file"});
    return std::nullopt;
  }
  return text;
}

// Orders the new problems by line (stable: problems on one line keep their order) and sums up the rest past
// kMaxDiagnostics in one line: nobody reads a million diagnostics.
void TidyDiagnostics(Diagnostics* diagnostics, size_t from, std::string_view file) {
  std::stable_sort(diagnostics->begin() + from, diagnostics->end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  if (diagnostics->size() - from <= kMaxDiagnostics) return;
  size_t dropped = diagnostics->size() - from - kMaxDiagnostics;
  diagnostics->resize(from + kMaxDiagnostics);
  diagnostics->push_back({std::string(file), 0, absl::StrCat("... and ", dropped, " more problems")});
}

// Reads and checks a message with `parse_and_check`, which appends every problem to the list it is given
// (`diagnostics`, or a local one when that is null): the message when it appended none, else the first problem,
// the new diagnostics sorted by line and capped. Never throws: an exception from below (an allocation, protobuf)
// is one more diagnostic.
template <typename Message>
absl::StatusOr<Message> ParseChecked(std::string_view file, Diagnostics* diagnostics,
                                     absl::FunctionRef<void(Message*, Diagnostics*)> parse_and_check) {
  Diagnostics local;
  if (diagnostics == nullptr) diagnostics = &local;
  const size_t before = diagnostics->size();
  try {
    Message message;
    parse_and_check(&message, diagnostics);
    if (diagnostics->size() == before) return message;
    TidyDiagnostics(diagnostics, before, file);
  } catch (const std::exception& e) {
    diagnostics->push_back({std::string(file), 0, absl::StrCat("internal error while reading: ", e.what())});
  }
  return FirstProblem(*diagnostics, before);
}

}  // namespace

absl::StatusOr<v1::ClusterDescription> ParseClusterDescription(std::string_view yaml, std::string_view file,
                                                               Diagnostics* diagnostics) {
  return ParseChecked<v1::ClusterDescription>(
      file, diagnostics, [&](v1::ClusterDescription* description, Diagnostics* found) {
        LineTable lines;
        if (StreamYamlToProto(yaml, file, "description", false, description, &lines, found, MaxYamlEvents(yaml))) {
          CheckDescription(*description, FieldPathLines(lines, *description), file, found);
        }
      });
}

absl::StatusOr<v1::ClusterDescription> LoadClusterDescription(const std::string& path, Diagnostics* diagnostics) {
  Diagnostics local;
  if (diagnostics == nullptr) diagnostics = &local;
  size_t before = diagnostics->size();
  std::optional<std::string> text = ReadFile(path, diagnostics);
  if (!text) return FirstProblem(*diagnostics, before);
  return ParseClusterDescription(*text, path, diagnostics);
}

bool ValidateClusterDescription(const v1::ClusterDescription& description, std::string_view file,
                                Diagnostics* diagnostics) {
  Diagnostics local;
  if (diagnostics == nullptr) diagnostics = &local;
  try {
    return CheckDescription(description, FieldPathLines(), file, diagnostics);
  } catch (const std::exception& e) {
    diagnostics->push_back({std::string(file), 0, absl::StrCat("internal error while checking: ", e.what())});
    return false;
  }
}

absl::StatusOr<v1::ClusterState> ParseClusterState(std::string_view yaml, std::string_view file,
                                                   const v1::ClusterDescription& description,
                                                   Diagnostics* diagnostics) {
  return ParseChecked<v1::ClusterState>(file, diagnostics, [&](v1::ClusterState* state, Diagnostics* found) {
    // A state file can hold 100k allocations: lines as integers, no node tree.
    LineTable lines;
    if (StreamYamlToProto(yaml, file, "state file", true, state, &lines, found, MaxYamlEvents(yaml))) {
      CheckState(*state, description, lines, file, found);
    }
  });
}

absl::StatusOr<v1::ClusterState> LoadClusterState(const std::string& path, const v1::ClusterDescription& description,
                                                  Diagnostics* diagnostics) {
  Diagnostics local;
  if (diagnostics == nullptr) diagnostics = &local;
  size_t before = diagnostics->size();
  std::optional<std::string> text = ReadFile(path, diagnostics);
  if (!text) return FirstProblem(*diagnostics, before);
  return ParseClusterState(*text, path, description, diagnostics);
}

std::string ClusterStateToYaml(const v1::ClusterState& state) { return ProtoToYaml(state); }

std::string ClusterDescriptionToYaml(const v1::ClusterDescription& description) { return ProtoToYaml(description); }

}  // namespace rackwise
