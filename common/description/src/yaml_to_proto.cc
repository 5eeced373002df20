// YAML -> protobuf by reflection. See yaml_to_proto.h for the mapping rules.
#include "yaml_to_proto.h"

#include "rackwise/guess_tag.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rackwise {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
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

// Protobuf strings must be UTF-8 (gRPC refuses to send anything else).
bool IsUtf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};  // shortest form per length (no overlongs)
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    if (c < 0x80) {
      extra = 0;
    } else if ((c >> 5) == 0x6) {
      extra = 1;
    } else if ((c >> 4) == 0xe) {
      extra = 2;
    } else if ((c >> 3) == 0x1e) {
      extra = 3;
    } else {
      return false;
    }
    if (extra > s.size() - i - 1) return false;
    uint32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    for (size_t k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

// "NvlinkScope" -> "NVLINK_SCOPE_"
std::string EnumPrefix(const EnumDescriptor& e) {
  std::string out;
  for (char c : e.name()) {
    if (absl::ascii_isupper(c) && !out.empty()) out += '_';
    out += absl::ascii_toupper(c);
  }
  return out + "_";
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: {
      std::string s = node.Scalar();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return absl::StrCat("'", s, "'");
    }
    default: return "nothing";
  }
}

std::string Wanted(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: return "a string";
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: return "a number";
    case FieldDescriptor::CPPTYPE_BOOL: return "true or false";
    case FieldDescriptor::CPPTYPE_ENUM: return "one of the names listed for it";
    case FieldDescriptor::CPPTYPE_MESSAGE: return "a map";
    default: return "a whole number";
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
      Report(line, absl::StrCat(Name(path), "expected a map of keys (",
                                absl::StrJoin(KnownKeys(*message->GetDescriptor()), ", "), "), got ", Describe(node)));
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
        Report(key_line, absl::StrCat(Name(path), "keys must be plain names, got ", Describe(key)));
        continue;
      }
      const std::string& name = key.Scalar();
      const FieldDescriptor* field = descriptor->FindFieldByName(name);
      if (field == nullptr) {
        Report(key_line, absl::StrCat("unknown key '", name, "'", path.empty() ? " at the top level" : " in " + path,
                                      " (expected one of: ", absl::StrJoin(KnownKeys(*descriptor), ", "), ")"));
        continue;
      }
      if (auto [first, inserted] = seen.try_emplace(name, key_line); !inserted) {
        Report(key_line, absl::StrCat("duplicate key '", name, "'", path.empty() ? "" : " in " + path,
                                      " (first on line ", first->second, ")"));
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
        Report(line, absl::StrCat(path, ": expected a list (", Wanted(field), " per item), got ", Describe(value)));
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
      Report(line, absl::StrCat(path, ": expected ", Wanted(field), ", got ", Describe(value)));
      return;
    }
    const Reflection* r = message->GetReflection();
    const std::string& text = value.Scalar();
    if (value.Tag() == kGuessTag) {  // left by `rackwise import` on every figure it could not know
      Report(line, absl::StrCat(path, ": guessed by rackwise import (", kGuessTag, " ", text,
                                "): replace it with the real figure and remove the ", kGuessTag, " tag"));
      return;
    }
    bool quoted = value.Tag() == "!";  // yaml-cpp tags quoted scalars "!", plain ones "?"
    bool repeated = field.is_repeated();
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        if (!IsUtf8(text)) {
          Report(line, absl::StrCat(path, ": not valid UTF-8 text"));
          return;
        }
        repeated ? r->AddString(message, &field, text) : r->SetString(message, &field, text);
        return;
      case FieldDescriptor::CPPTYPE_BOOL: {
        std::string lower = absl::AsciiStrToLower(std::string(text));
        if (quoted || (lower != "true" && lower != "false")) {
          Report(line, absl::StrCat(path, ": expected true or false, got ", Describe(value)));
          return;
        }
        repeated ? r->AddBool(message, &field, lower == "true") : r->SetBool(message, &field, lower == "true");
        return;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumValueDescriptor* v = FindEnumValue(*field.enum_type(), text);
        if (v == nullptr) {
          Report(line, absl::StrCat(path, ": unknown value ", Describe(value),
                                    " (expected one of: ", absl::StrJoin(EnumNames(*field.enum_type()), ", "), ")"));
          return;
        }
        repeated ? r->AddEnum(message, &field, v) : r->SetEnum(message, &field, v);
        return;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        std::optional<double> d = quoted ? std::nullopt : ParseDouble(text);
        if (!d) {
          Report(line,
                 absl::StrCat(path, ": expected a number, got ", quoted ? "the quoted string " : "", Describe(value)));
          return;
        }
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
          repeated ? r->AddFloat(message, &field, static_cast<float>(*d))
                   : r->SetFloat(message, &field, static_cast<float>(*d));
        } else {
          repeated ? r->AddDouble(message, &field, *d) : r->SetDouble(message, &field, *d);
        }
        return;
      }
      default: SetInteger(value, text, quoted, message, field, path, line);
    }
  }

  void SetInteger(const YAML::Node& value, const std::string& text, bool quoted, Message* message,
                  const FieldDescriptor& field, const std::string& path, int line) {
    const Reflection* r = message->GetReflection();
    bool is_signed =
        field.cpp_type() == FieldDescriptor::CPPTYPE_INT32 || field.cpp_type() == FieldDescriptor::CPPTYPE_INT64;
    int64_t min = 0;
    uint64_t max = 0;
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_UINT32: max = std::numeric_limits<uint32_t>::max(); break;
      default: max = std::numeric_limits<uint64_t>::max();
    }
    std::string_view digits = text;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    bool all_digits = !digits.empty() && end == digits.data() + digits.size();
    if (quoted || !all_digits || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      Report(line, absl::StrCat(path, ": expected a whole number, got ", quoted ? "the quoted string " : "",
                                Describe(value)));
      return;
    }
    if (negative && magnitude != 0 && !is_signed) {
      Report(line, absl::StrCat(path, ": must not be negative, got ", text));
      return;
    }
    bool too_big = ec == std::errc::result_out_of_range ||
                   (negative ? magnitude > static_cast<uint64_t>(-(min + 1)) + 1 : magnitude > max);
    if (too_big) {
      Report(line, absl::StrCat(path, ": number out of range: ", Describe(value)));
      return;
    }
    int64_t signed_value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    bool rep = field.is_repeated();
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        rep ? r->AddInt32(message, &field, static_cast<int32_t>(signed_value))
            : r->SetInt32(message, &field, static_cast<int32_t>(signed_value));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        rep ? r->AddInt64(message, &field, signed_value) : r->SetInt64(message, &field, signed_value);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        rep ? r->AddUInt32(message, &field, static_cast<uint32_t>(magnitude))
            : r->SetUInt32(message, &field, static_cast<uint32_t>(magnitude));
        break;
      default: rep ? r->AddUInt64(message, &field, magnitude) : r->SetUInt64(message, &field, magnitude);
    }
  }

  static std::optional<double> ParseDouble(std::string_view text) {
    std::string lower = absl::AsciiStrToLower(std::string(text));
    if (lower == ".inf" || lower == "+.inf") return std::numeric_limits<double>::infinity();
    if (lower == "-.inf") return -std::numeric_limits<double>::infinity();
    if (lower == ".nan") return std::numeric_limits<double>::quiet_NaN();
    std::string_view s = text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    if (s.empty() || !(absl::ascii_isdigit(s[0]) || s[0] == '-' || s[0] == '.')) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (end != s.data() + s.size()) return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
      // Overflow becomes an infinity (reported later as not finite); underflow (a negative exponent) is zero.
      size_t e = s.find_first_of("eE");
      if (e != std::string_view::npos && e + 1 < s.size() && s[e + 1] == '-') return 0.0;
      return s[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    }
    if (ec != std::errc()) return std::nullopt;
    return value;
  }

  static const EnumValueDescriptor* FindEnumValue(const EnumDescriptor& e, std::string_view text) {
    std::string lower = absl::AsciiStrToLower(std::string(text));
    for (int i = 0; i < e.value_count(); ++i) {
      const EnumValueDescriptor* v = e.value(i);
      if (v->number() == 0) continue;  // UNSPECIFIED is never written
      if (EnumValueYamlName(*v) == lower) return v;
    }
    return nullptr;
  }

  static std::vector<std::string> EnumNames(const EnumDescriptor& e) {
    std::vector<std::string> names;
    for (int i = 0; i < e.value_count(); ++i) {
      if (e.value(i)->number() != 0) names.push_back(EnumValueYamlName(*e.value(i)));
    }
    return names;
  }

  static std::vector<std::string> KnownKeys(const Descriptor& d) {
    std::vector<std::string> keys;
    for (int i = 0; i < d.field_count(); ++i) keys.push_back(d.field(i)->name());
    return keys;
  }

  static std::string Name(const std::string& path) { return path.empty() ? "" : path + ": "; }

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

std::string EnumValueYamlName(const EnumValueDescriptor& value) {
  std::string prefix = EnumPrefix(*value.type());
  std::string_view name = value.name();
  if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(std::string(name));
}

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
