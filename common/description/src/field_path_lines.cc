// See field_path_lines.h. A path is walked a segment ("name" or "name[i]") at a time, from the document down,
// keeping the line of the deepest part that was written.
#include "field_path_lines.h"

#include <charconv>
#include <string>

namespace rackwise {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

struct Segment {
  std::string_view name;
  int index = -1;  // -1: the field itself
  bool ok = true;
};

// Takes the first segment off `path`.
Segment NextSegment(std::string_view* path) {
  Segment s;
  size_t end = path->find('.');
  std::string_view part = path->substr(0, end);
  *path = end == std::string_view::npos ? std::string_view() : path->substr(end + 1);
  size_t bracket = part.find('[');
  s.name = part.substr(0, bracket);
  if (bracket == std::string_view::npos) return s;
  std::string_view digits = part.substr(bracket + 1);
  if (digits.empty() || digits.back() != ']') return {s.name, -1, false};
  digits.remove_suffix(1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), s.index);
  s.ok = ec == std::errc() && ptr == digits.data() + digits.size() && s.index >= 0;
  return s;
}

}  // namespace

FieldPathLines::Found FieldPathLines::Resolve(std::string_view path) const {
  Found found;
  if (lines_ == nullptr) return found;
  LineTable::Ref ref = lines_->Root();
  const Message* message = message_;
  found.line = lines_->Line(ref);
  found.exact = path.empty();
  while (!path.empty()) {
    Segment s = NextSegment(&path);
    const FieldDescriptor* field =
        message == nullptr ? nullptr : message->GetDescriptor()->FindFieldByName(std::string(s.name));
    if (!s.ok || field == nullptr || !lines_->Has(ref, field->index())) return found;
    const int f = field->index();
    found.line = lines_->FieldLine(ref, f);
    found.rejected = lines_->Rejected(ref, f);
    bool last = path.empty();
    if (s.index < 0 && !field->is_repeated() && field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (last) return {found.line, true, found.rejected};
      message = &message->GetReflection()->GetMessage(*message, field);
      ref = lines_->Child(ref, f, 0);
      continue;
    }
    if (s.index < 0) return {found.line, last, found.rejected};
    if (!field->is_repeated() || s.index >= message->GetReflection()->FieldSize(*message, field)) return found;
    found.rejected = false;
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      found.line = lines_->ItemLine(ref, f, s.index);
      found.exact = last;
      return found;
    }
    ref = lines_->Child(ref, f, s.index);
    message = &message->GetReflection()->GetRepeatedMessage(*message, field, s.index);
    found.line = lines_->Line(ref);
    if (last) found.exact = true;
  }
  return found;
}

int FieldPathLines::Line(std::string_view path) const { return Resolve(path).line; }

bool FieldPathLines::Has(std::string_view path) const { return Resolve(path).exact; }

bool FieldPathLines::Rejected(std::string_view path) const {
  Found found = Resolve(path);
  return found.exact && found.rejected;
}

}  // namespace rackwise
