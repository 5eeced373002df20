// Protobuf -> YAML by reflection; see proto_to_yaml.h.
#include "proto_to_yaml.h"

#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"
#include "yaml_scalar.h"

namespace rackwise {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The shortest text that reads back as exactly `value` (YAML spellings for the non-finite ones).
std::string FormatDouble(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

void EmitMessage(YAML::Emitter& out, const Message& message);

void EmitValue(YAML::Emitter& out, const Message& message, const FieldDescriptor& field, int index) {
  const Reflection* r = message.GetReflection();
  bool rep = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE:
      EmitMessage(out, rep ? r->GetRepeatedMessage(message, &field, index) : r->GetMessage(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      out << (rep ? r->GetRepeatedString(message, &field, index) : r->GetString(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      out << EnumValueYamlName(rep ? *r->GetRepeatedEnum(message, &field, index) : *r->GetEnum(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      out << FormatDouble(rep ? r->GetRepeatedDouble(message, &field, index) : r->GetDouble(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      out << FormatDouble(rep ? r->GetRepeatedFloat(message, &field, index) : r->GetFloat(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out << ((rep ? r->GetRepeatedBool(message, &field, index) : r->GetBool(message, &field)) ? "true" : "false");
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      out << absl::StrCat(rep ? r->GetRepeatedInt32(message, &field, index) : r->GetInt32(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      out << absl::StrCat(rep ? r->GetRepeatedInt64(message, &field, index) : r->GetInt64(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      out << absl::StrCat(rep ? r->GetRepeatedUInt32(message, &field, index) : r->GetUInt32(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      out << absl::StrCat(rep ? r->GetRepeatedUInt64(message, &field, index) : r->GetUInt64(message, &field));
      break;
  }
}

void EmitMessage(YAML::Emitter& out, const Message& message) {
  const Reflection* r = message.GetReflection();
  const auto* descriptor = message.GetDescriptor();
  out << YAML::BeginMap;
  for (int i = 0; i < descriptor->field_count(); ++i) {  // declaration order: the documented key order
    const FieldDescriptor& field = *descriptor->field(i);
    if (field.is_repeated()) {
      int size = r->FieldSize(message, &field);
      if (size == 0) continue;
      bool flow = field.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE;  // gpus: [0, 1, 2]
      out << YAML::Key << field.name() << YAML::Value;
      if (flow) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (int k = 0; k < size; ++k) EmitValue(out, message, field, k);
      out << YAML::EndSeq;
      continue;
    }
    if (!r->HasField(message, &field)) continue;  // proto3: default scalars and unset messages
    out << YAML::Key << field.name() << YAML::Value;
    EmitValue(out, message, field, 0);
  }
  out << YAML::EndMap;
}

}  // namespace

std::string ProtoToYaml(const Message& message) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  EmitMessage(out, message);
  std::string text = out.c_str();
  if (text == "{}") return "{}\n";
  // A blank line before every top-level key after the first.
  std::string spaced;
  size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!first && !line.empty() && line[0] != ' ' && line[0] != '-') spaced += '\n';
    spaced.append(line);
    spaced += '\n';
    first = false;
    start = end + 1;
  }
  return spaced;
}

}  // namespace rackwise
