// How one YAML value becomes a protobuf field, and the words used when it cannot: used by the event reader
// (yaml_stream) and by the writer (proto_to_yaml, enum names), and by the tree mapper the tests keep as an
// independent checker (yaml_tree_oracle), so all read and refuse the same text with the same diagnostics.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace rackwise {

// A scalar as the YAML text wrote it.
struct YamlScalar {
  std::string_view text;
  bool quoted = false;   // '...' or "..." without an explicit tag: never a number, a boolean or an enum
  std::string_view tag;  // an explicit tag ("!guess"); empty when there is none
};

// Sets `field` of `message` (adds to it when repeated) from `scalar`. Returns nullopt, or what is wrong with the
// text; the caller prefixes it with "PATH: " and the line.
std::optional<std::string> SetFieldFromScalar(const YamlScalar& scalar, google::protobuf::Message* message,
                                              const google::protobuf::FieldDescriptor& field);

// Well-formed UTF-8 (shortest forms, no surrogates). Protobuf strings must be UTF-8 (gRPC refuses to send
// anything else).
bool IsUtf8(std::string_view s);

// A scalar quoted for a diagnostic ("'text'", cut after 40 characters).
std::string DescribeScalar(std::string_view text);

// Diagnostics of the map/list/scalar structure. `got` is DescribeScalar's text, "a map", "a list" or "nothing";
// `path` is the field's ("racks[2].nodes"), "" for the document itself.
std::string ExpectedMapMessage(const std::string& path, const google::protobuf::Descriptor& message,
                               std::string_view got);
std::string ExpectedListMessage(const std::string& path, const google::protobuf::FieldDescriptor& field,
                                std::string_view got);
std::string ExpectedScalarMessage(const std::string& path, const google::protobuf::FieldDescriptor& field,
                                  std::string_view got);
std::string NonScalarKeyMessage(const std::string& path, std::string_view got);
std::string UnknownKeyMessage(std::string_view name, const std::string& path,
                              const google::protobuf::Descriptor& message);
std::string DuplicateKeyMessage(std::string_view name, const std::string& path, int first_line);

// The YAML spelling of an enum value: its name without the enum's prefix, in lower case
// (NVLINK_SCOPE_RACK -> "rack").
std::string EnumValueYamlName(const google::protobuf::EnumValueDescriptor& value);

}  // namespace rackwise
