// The inverse of yaml_stream: writes a message as YAML by reflection, keys in the schema's declaration order
// (the documented order), enum values by their YAML names, numbers in their shortest exact form, and fields at
// their default value left out. Reading the output with StreamYamlToProto gives back an equal message.
#pragma once

#include <string>

#include "google/protobuf/message.h"

namespace rackwise {

// The YAML text of `message`, with a blank line between top-level keys for readability.
std::string ProtoToYaml(const google::protobuf::Message& message);

}  // namespace rackwise
