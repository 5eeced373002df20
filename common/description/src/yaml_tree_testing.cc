// YAML -> protobuf by reflection over a yaml-cpp node tree, for the tests. See yaml_tree_testing.h.
#include "yaml_tree_testing.h"

#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "yaml_scalar.h"

namespace rackwise {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void SourceLines::Set(const std::string& path, int line) { lines_.insert_or_assign(path, line); }

bool SourceLines::Has(std::string_view path) const {
  return lines_.contains(absl::string_view(path.data(), path.size()));
}

int SourceLines::Line(std::string_view path) const {
  while (true) {
    if (auto it = lines_.find(absl::string_view(path.data(), path.size())); it != lines_.end()) return it->second;
    if (path.empty()) return 0;
    size_t cut = path.find_last_of(".[");
    path = cut == std::string_view::npos ? std::string_view() : path.substr(0, cut);
  }
}

namespace {

// Counts documents without building nodes, recording where each starts. yaml-cpp 0.7's LoadAll loops for ever
// (and eats all memory) on some inputs, e.g. a document starting with ',': the parser reports a new document
// without consuming anything. Seeing two documents start at the same place is how that case is caught.
class DocumentCounter : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

int LineOfMark(const YAML::Mark& mark) { return mark.line >= 0 ? mark.line + 1 : 0; }

}  // namespace

std::optional<YAML::Node> ParseYamlDocument(std::string_view text, std::string_view file, Diagnostics* diagnostics) {
  try {
    std::string owned(text);
    {
      std::istringstream in(owned);
      YAML::Parser parser(in);
      DocumentCounter counter;
      for (int docs = 0; docs < 3 && parser.HandleNextDocument(counter); ++docs) {
      }
      const std::vector<YAML::Mark>& starts = counter.starts;
      for (size_t i = 1; i < starts.size(); ++i) {
        if (starts[i].pos == starts[i - 1].pos) {
          diagnostics->push_back({std::string(file), LineOfMark(starts[i]),
                                  "YAML syntax error: unexpected character (a stray ',' or the like)"});
          return std::nullopt;
        }
      }
      if (starts.size() > 1) {
        diagnostics->push_back(
            {std::string(file), LineOfMark(starts[1]), "more than one YAML document ('---'): expected exactly one"});
        return std::nullopt;
      }
      if (starts.empty()) return YAML::Node();
    }
    return YAML::Load(owned);  // the first (and only) document
  } catch (const YAML::Exception& e) {
    diagnostics->push_back({std::string(file), LineOfMark(e.mark), absl::StrCat("YAML syntax error: ", e.msg)});
  } catch (const std::exception& e) {
    diagnostics->push_back({std::string(file), 0, absl::StrCat("cannot read YAML: ", e.what())});
  }
  return std::nullopt;
}

namespace {

// yaml-cpp's view of a node, in the words of diagnostics.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return DescribeScalar(node.Scalar());
    default: return "nothing";
  }
}

class Mapper {
 public:
  Mapper(std::string_view file, SourceLines* lines, Diagnostics* diagnostics, size_t max_visits)
      : file_(file), lines_(lines), diagnostics_(diagnostics), max_visits_(max_visits) {}

  bool ok() const { return errors_ == 0; }
  bool aborted() const { return aborted_; }

  void MapMessage(const YAML::Node& node, Message* message, const std::string& path, int line) {
    if (!Visit(line)) return;
    if (!node.IsMap()) {
      Report(line, ExpectedMapMessage(path, *message->GetDescriptor(), Describe(node)));
      return;
    }
    const Descriptor* descriptor = message->GetDescriptor();
    absl::flat_hash_map<std::string, int> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (aborted_) return;
      const YAML::Node key = it->first;  // copies: it-> hands out a temporary
      const YAML::Node value = it->second;
      int key_line = LineOf(key, line);
      if (!Visit(key_line)) return;
      if (!key.IsScalar()) {
        Report(key_line, NonScalarKeyMessage(path, Describe(key)));
        continue;
      }
      const std::string& name = key.Scalar();
      const FieldDescriptor* field = descriptor->FindFieldByName(name);
      if (field == nullptr) {
        Report(key_line, UnknownKeyMessage(name, path, *descriptor));
        continue;
      }
      if (auto [first, inserted] = seen.try_emplace(name, key_line); !inserted) {
        Report(key_line, DuplicateKeyMessage(name, path, first->second));
        continue;
      }
      std::string field_path = path.empty() ? name : absl::StrCat(path, ".", name);
      if (value.IsDefined() && !value.IsNull()) lines_->Set(field_path, key_line);  // `key:` alone is absent
      int errors_before = errors_;
      MapField(value, message, *field, field_path, key_line);
      if (errors_ > errors_before) lines_->Reject(field_path);
    }
  }

 private:
  void MapField(const YAML::Node& value, Message* message, const FieldDescriptor& field, const std::string& path,
                int line) {
    if (!value.IsDefined() || value.IsNull()) return;  // `key:` with no value: as if absent
    const Reflection* reflection = message->GetReflection();
    if (field.is_repeated()) {
      if (!value.IsSequence()) {
        Report(line, ExpectedListMessage(path, field, Describe(value)));
        return;
      }
      int index = 0;
      for (auto it = value.begin(); it != value.end() && !aborted_; ++it, ++index) {
        const YAML::Node item = *it;
        std::string item_path = absl::StrCat(path, "[", index, "]");
        int item_line = LineOf(item, line);
        lines_->Set(item_path, item_line);
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          MapMessage(item, reflection->AddMessage(message, &field), item_path, item_line);
        } else {
          SetScalar(item, message, field, item_path, item_line);
        }
      }
      return;
    }
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      MapMessage(value, reflection->MutableMessage(message, &field), path, line);
      return;
    }
    SetScalar(value, message, field, path, line);
  }

  void SetScalar(const YAML::Node& value, Message* message, const FieldDescriptor& field, const std::string& path,
                 int line) {
    if (!Visit(line)) return;
    if (!value.IsScalar()) {
      Report(line, ExpectedScalarMessage(path, field, Describe(value)));
      return;
    }
    const std::string& tag = value.Tag();  // yaml-cpp tags quoted scalars "!", plain ones "?"
    YamlScalar scalar{value.Scalar(), tag == "!", tag == "!" || tag == "?" ? std::string_view() : tag};
    if (std::optional<std::string> problem = SetFieldFromScalar(scalar, message, field)) {
      Report(line, absl::StrCat(path, ": ", *problem));
    }
  }

  static int LineOf(const YAML::Node& node, int fallback) {
    int line = node.Mark().line;
    return line >= 0 ? line + 1 : fallback;
  }

  bool Visit(int line) {
    if (aborted_) return false;
    if (++visits_ <= max_visits_) return true;
    aborted_ = true;
    Report(line, absl::StrCat("document too large: more than ", max_visits_,
                              " values (aliases are counted each time they are used)"));
    return false;
  }

  void Report(int line, std::string message) {
    ++errors_;
    diagnostics_->push_back({std::string(file_), line, std::move(message)});
  }

  std::string_view file_;
  SourceLines* lines_;
  Diagnostics* diagnostics_;
  size_t max_visits_;
  size_t visits_ = 0;
  int errors_ = 0;
  bool aborted_ = false;
};

}  // namespace

bool YamlToProto(const YAML::Node& node, Message* message, std::string_view file, SourceLines* lines,
                 Diagnostics* diagnostics, size_t max_visits, bool* aborted) {
  Mapper mapper(file, lines, diagnostics, max_visits);
  if (aborted != nullptr) *aborted = false;
  try {
    int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    lines->Set("", line);
    mapper.MapMessage(node, message, "", line);
  } catch (const std::exception& e) {  // yaml-cpp may throw on malformed node graphs; never let it escape
    diagnostics->push_back({std::string(file), 0, absl::StrCat("cannot read YAML: ", e.what())});
    if (aborted != nullptr) *aborted = true;
    return false;
  }
  if (aborted != nullptr) *aborted = mapper.aborted();
  return mapper.ok();
}

}  // namespace rackwise
