// See yaml_stream.h. The mapper pulls events: every Map/Set/Skip function
// starts with the node's first event current and returns with the event after the node current.
#include "yaml_stream.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "yaml_events.h"
#include "yaml_scalar.h"

namespace rackwise {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

class EventMapper {
 public:
  EventMapper(YamlEventSource* source, std::string_view file, LineTable* lines, Diagnostics* diagnostics)
      : source_(*source), file_(file), lines_(*lines), diagnostics_(*diagnostics) {}

  // The document: nothing (an empty message, refused unless `empty_ok`) or a map. Returns false when it is not
  // usable at all.
  bool MapDocument(Message* message, std::string_view what, bool empty_ok) {
    size_t before = diagnostics_.size();
    source_.Next();  // the stream's start
    source_.Next();  // the document's start, or the stream's end when there is no document
    bool empty = true;
    std::optional<Diagnostic> not_a_map;
    if (Ok() && Current().kind != YamlEvent::kStreamEnd) {
      source_.Next();  // the root node
      if (Ok() && Current().kind == YamlEvent::kMapStart) {
        int line = Current().line;
        empty = MapMessage(message, lines_.AddRoot(line, message->GetDescriptor()->field_count()), line) == 0;
      } else if (Ok() && !Current().IsNull()) {
        empty = false;
        not_a_map = Diagnostic{std::string(file_), Current().line,
                               absl::StrCat("expected a map of keys at the top of the ", A(what), ", got ",
                                            Current().kind == YamlEvent::kListStart ? "a list" : "a value")};
        Skip();
      } else {
        source_.Next();
      }
      if (Ok()) source_.Next();  // past the document end
    }
    if (source_.over_budget()) {
      Report(source_.error_line(), source_.error());
      return false;
    }
    if (!Ok() || Current().kind == YamlEvent::kDocumentStart) {  // only that problem, as a parser would say
      diagnostics_.resize(before);
      diagnostics_.push_back(Ok() ? Diagnostic{std::string(file_), Current().line,
                                               "more than one YAML document ('---'): expected exactly one"}
                                  : Diagnostic{std::string(file_), source_.error_line(), source_.error()});
      return false;
    }
    if (empty && !empty_ok) not_a_map = Diagnostic{std::string(file_), 0, absl::StrCat("empty ", A(what))};
    if (not_a_map) diagnostics_.push_back(*not_a_map);
    return !not_a_map;
  }

 private:
  // Per message being read, the line of each field's first key (a duplicate is refused even after `key:`).
  using FirstKeyLines = absl::InlinedVector<int, 8>;

  // Returns the number of keys the map held.
  size_t MapMessage(Message* message, LineTable::Ref ref, int line) {
    const Descriptor& descriptor = *message->GetDescriptor();
    if (!Resolve()) return 0;
    if (Current().kind != YamlEvent::kMapStart) {
      Report(line, ExpectedMapMessage(Path(), descriptor, Current().Describe()));
      Skip();
      return 0;
    }
    FirstKeyLines first_key_line(static_cast<size_t>(descriptor.field_count()));  // 0: not seen yet
    source_.Next();
    size_t keys = 0;
    for (; Ok() && Current().kind != YamlEvent::kMapEnd; ++keys) MapEntry(message, descriptor, ref, &first_key_line);
    source_.Next();
    return keys;
  }

  // One key and its value.
  void MapEntry(Message* message, const Descriptor& descriptor, LineTable::Ref ref, FirstKeyLines* first_key_line) {
    if (!Resolve()) return;
    int key_line = Current().line;
    if (Current().kind != YamlEvent::kScalar || Current().IsNull()) {
      Report(key_line, NonScalarKeyMessage(Path(), Current().Describe()));
      Skip();  // the key
      Skip();  // its value
      return;
    }
    const FieldDescriptor* field = descriptor.FindFieldByName(Current().value);
    if (field == nullptr) {
      Report(key_line, UnknownKeyMessage(Current().value, Path(), descriptor));
      source_.Next();
      Skip();
      return;
    }
    int& first = (*first_key_line)[static_cast<size_t>(field->index())];
    if (first != 0) {
      Report(key_line, DuplicateKeyMessage(field->name(), Path(), first));
      source_.Next();
      Skip();
      return;
    }
    first = key_line;
    source_.Next();
    if (!Resolve()) return;
    if (Current().IsNull()) {  // `key:` with no value: as if absent
      source_.Next();
      return;
    }
    lines_.SetField(ref, field->index(), key_line);
    int errors_before = errors_;
    path_.push_back({field, -1});
    if (field->is_repeated()) {
      MapList(message, *field, ref, key_line);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Message* child = message->GetReflection()->MutableMessage(message, field);
      MapMessage(child, lines_.AddChild(ref, field->index(), key_line, field->message_type()->field_count()), key_line);
    } else {
      SetScalar(message, *field, ref, key_line);
    }
    path_.pop_back();
    if (errors_ > errors_before) lines_.RejectField(ref, field->index());
  }

  void MapList(Message* message, const FieldDescriptor& field, LineTable::Ref ref, int line) {
    if (Current().kind != YamlEvent::kListStart) {
      Report(line, ExpectedListMessage(Path(), field, Current().Describe()));
      Skip();
      return;
    }
    const Reflection* reflection = message->GetReflection();
    source_.Next();
    for (int index = 0; Ok() && Current().kind != YamlEvent::kListEnd; ++index) {
      if (!Resolve()) return;
      int item_line = Current().line;
      path_.back().index = index;
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Message* child = reflection->AddMessage(message, &field);
        MapMessage(child, lines_.AddChild(ref, field.index(), item_line, field.message_type()->field_count()),
                   item_line);
      } else {
        SetScalar(message, field, ref, item_line);
      }
    }
    path_.back().index = -1;
    source_.Next();
  }

  void SetScalar(Message* message, const FieldDescriptor& field, LineTable::Ref ref, int line) {
    const YamlEvent& e = Current();
    if (e.kind != YamlEvent::kScalar || e.IsNull()) {
      Report(line, ExpectedScalarMessage(Path(), field, e.Describe()));
      Skip();
      return;
    }
    if (std::optional<std::string> problem = SetFieldFromScalar({e.value, e.quoted, e.tag}, message, field)) {
      Report(line, absl::StrCat(Path(), ": ", *problem));
    } else if (field.is_repeated()) {
      lines_.AddItem(ref, field.index(), line);
    }
    source_.Next();
  }

  const YamlEvent& Current() const { return source_.current(); }
  bool Ok() const { return !source_.failed(); }

  // Follows an alias (the node it names becomes current); false when reading has stopped.
  bool Resolve() {
    if (Ok() && Current().kind == YamlEvent::kAlias) source_.FollowAlias();
    return Ok();
  }

  // Consumes the current node without following aliases inside it.
  void Skip() {
    int depth = 0;
    do {
      YamlEvent::Kind kind = Current().kind;
      if (kind == YamlEvent::kMapStart || kind == YamlEvent::kListStart) ++depth;
      if (kind == YamlEvent::kMapEnd || kind == YamlEvent::kListEnd) --depth;
      if (!source_.Next()) return;
    } while (depth > 0);
  }

  std::string Path() const {
    std::string out;
    for (const Segment& s : path_) {
      if (s.field != nullptr) absl::StrAppend(&out, out.empty() ? "" : ".", s.field->name());
      if (s.index >= 0) absl::StrAppend(&out, "[", s.index, "]");
    }
    return out;
  }

  void Report(int line, std::string message) {
    ++errors_;
    diagnostics_.push_back({std::string(file_), line, std::move(message)});
  }

  struct Segment {
    const FieldDescriptor* field;
    int index;  // -1: the field itself
  };

  YamlEventSource& source_;
  std::string_view file_;
  LineTable& lines_;
  Diagnostics& diagnostics_;
  std::vector<Segment> path_;
  int errors_ = 0;
};

}  // namespace

bool StreamYamlToProto(std::string_view yaml, std::string_view file, std::string_view what, bool empty_ok,
                       Message* message, LineTable* lines, Diagnostics* diagnostics, size_t max_events) {
  YamlEventSource source(yaml, max_events);
  lines->AddRoot(0, message->GetDescriptor()->field_count());
  return EventMapper(&source, file, lines, diagnostics).MapDocument(message, what, empty_ok);
}

}  // namespace rackwise
