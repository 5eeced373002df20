// Scalar text -> protobuf field; see yaml_scalar.h.
#include "yaml_scalar.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rackwise/guess_tag.h"

namespace rackwise {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

namespace {

// The std::string_view as absl's (Debian's abseil is built with its own string_view).
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// "NvlinkScope" -> "NVLINK_SCOPE_"
std::string EnumPrefix(const EnumDescriptor& e) {
  std::string out;
  for (char c : e.name()) {
    if (absl::ascii_isupper(c) && !out.empty()) out += '_';
    out += absl::ascii_toupper(c);
  }
  return out + "_";
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

std::string KnownKeys(const Descriptor& d) {
  std::vector<std::string> keys;
  for (int i = 0; i < d.field_count(); ++i) keys.push_back(d.field(i)->name());
  return absl::StrJoin(keys, ", ");
}

std::string Name(const std::string& path) { return path.empty() ? "" : path + ": "; }

std::optional<double> ParseDouble(std::string_view text) {
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

const EnumValueDescriptor* FindEnumValue(const EnumDescriptor& e, std::string_view text) {
  std::string lower = absl::AsciiStrToLower(std::string(text));
  for (int i = 0; i < e.value_count(); ++i) {
    const EnumValueDescriptor* v = e.value(i);
    if (v->number() == 0) continue;  // UNSPECIFIED is never written
    if (EnumValueYamlName(*v) == lower) return v;
  }
  return nullptr;
}

std::string EnumNames(const EnumDescriptor& e) {
  std::vector<std::string> names;
  for (int i = 0; i < e.value_count(); ++i) {
    if (e.value(i)->number() != 0) names.push_back(EnumValueYamlName(*e.value(i)));
  }
  return absl::StrJoin(names, ", ");
}

std::optional<std::string> SetInteger(const YamlScalar& scalar, Message* message, const FieldDescriptor& field) {
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
  std::string_view digits = scalar.text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  bool all_digits = !digits.empty() && end == digits.data() + digits.size();
  if (scalar.quoted || !all_digits || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return absl::StrCat("expected a whole number, got ", scalar.quoted ? "the quoted string " : "",
                        DescribeScalar(scalar.text));
  }
  if (negative && magnitude != 0 && !is_signed) return absl::StrCat("must not be negative, got ", A(scalar.text));
  bool too_big = ec == std::errc::result_out_of_range ||
                 (negative ? magnitude > static_cast<uint64_t>(-(min + 1)) + 1 : magnitude > max);
  if (too_big) return absl::StrCat("number out of range: ", DescribeScalar(scalar.text));
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
  return std::nullopt;
}

std::optional<std::string> SetNumber(const YamlScalar& scalar, Message* message, const FieldDescriptor& field) {
  std::optional<double> d = scalar.quoted ? std::nullopt : ParseDouble(scalar.text);
  if (!d) {
    return absl::StrCat("expected a number, got ", scalar.quoted ? "the quoted string " : "",
                        DescribeScalar(scalar.text));
  }
  const Reflection* r = message->GetReflection();
  bool repeated = field.is_repeated();
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    repeated ? r->AddFloat(message, &field, static_cast<float>(*d))
             : r->SetFloat(message, &field, static_cast<float>(*d));
  } else {
    repeated ? r->AddDouble(message, &field, *d) : r->SetDouble(message, &field, *d);
  }
  return std::nullopt;
}

}  // namespace

bool IsUtf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};  // shortest form per length (no overlongs)
  size_t i = 0;
  while (i < s.size()) {
    // Whole texts are checked before reading (yaml_events.cc): ASCII runs go eight bytes at a time.
    for (uint64_t word; i + 8 <= s.size(); i += 8) {
      std::memcpy(&word, s.data() + i, 8);
      if (word & 0x8080808080808080u) break;
    }
    if (i == s.size()) break;
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

std::optional<std::string> SetFieldFromScalar(const YamlScalar& scalar, Message* message,
                                              const FieldDescriptor& field) {
  if (scalar.tag == kGuessTag) {  // left by `rackwise import` on every figure it could not know
    // A scope is no figure: say what each answer means, since a wrong one misplaces every job of the type.
    if (field.name() == "nvlink") {
      return absl::StrCat("guessed by rackwise import (", kGuessTag, " ", A(scalar.text),
                          "): the NVLink scope could not be told from the scheduler's files; confirm it (node: each "
                          "node is its own NVLink domain, as an HGX board; rack: the rack's nodes share one, as "
                          "NVL72 trays) and remove the ",
                          kGuessTag, " tag");
    }
    return absl::StrCat("guessed by rackwise import (", kGuessTag, " ", A(scalar.text),
                        "): replace it with the real figure and remove the ", kGuessTag, " tag");
  }
  const Reflection* r = message->GetReflection();
  bool repeated = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: {
      if (!IsUtf8(scalar.text)) return "not valid UTF-8 text";
      std::string text(scalar.text);
      repeated ? r->AddString(message, &field, std::move(text)) : r->SetString(message, &field, std::move(text));
      return std::nullopt;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      std::string lower = absl::AsciiStrToLower(A(scalar.text));
      if (scalar.quoted || (lower != "true" && lower != "false")) {
        return absl::StrCat("expected true or false, got ", DescribeScalar(scalar.text));
      }
      repeated ? r->AddBool(message, &field, lower == "true") : r->SetBool(message, &field, lower == "true");
      return std::nullopt;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const EnumValueDescriptor* v = FindEnumValue(*field.enum_type(), scalar.text);
      if (v == nullptr) {
        return absl::StrCat("unknown value ", DescribeScalar(scalar.text),
                            " (expected one of: ", EnumNames(*field.enum_type()), ")");
      }
      repeated ? r->AddEnum(message, &field, v) : r->SetEnum(message, &field, v);
      return std::nullopt;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: return SetNumber(scalar, message, field);
    default: return SetInteger(scalar, message, field);
  }
}

std::string DescribeScalar(std::string_view text) {
  if (text.size() > 40) return absl::StrCat("'", A(text.substr(0, 40)), "...'");
  return absl::StrCat("'", A(text), "'");
}

std::string ExpectedMapMessage(const std::string& path, const Descriptor& message, std::string_view got) {
  return absl::StrCat(Name(path), "expected a map of keys (", KnownKeys(message), "), got ", A(got));
}

std::string ExpectedListMessage(const std::string& path, const FieldDescriptor& field, std::string_view got) {
  return absl::StrCat(path, ": expected a list (", Wanted(field), " per item), got ", A(got));
}

std::string ExpectedScalarMessage(const std::string& path, const FieldDescriptor& field, std::string_view got) {
  return absl::StrCat(path, ": expected ", Wanted(field), ", got ", A(got));
}

std::string NonScalarKeyMessage(const std::string& path, std::string_view got) {
  return absl::StrCat(Name(path), "keys must be plain names, got ", A(got));
}

std::string UnknownKeyMessage(std::string_view name, const std::string& path, const Descriptor& message) {
  return absl::StrCat("unknown key '", A(name), "'", path.empty() ? " at the top level" : " in " + path,
                      " (expected one of: ", KnownKeys(message), ")");
}

std::string DuplicateKeyMessage(std::string_view name, const std::string& path, int first_line) {
  return absl::StrCat("duplicate key '", A(name), "'", path.empty() ? "" : " in " + path, " (first on line ",
                      first_line, ")");
}

std::string EnumValueYamlName(const EnumValueDescriptor& value) {
  std::string prefix = EnumPrefix(*value.type());
  std::string_view name = value.name();
  if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(std::string(name));
}

}  // namespace rackwise
