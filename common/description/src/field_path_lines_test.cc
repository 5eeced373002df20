// FieldPathLines (paths over the LineTable the event reader fills) against SourceLines (string paths recorded by
// the yaml-cpp tree mapper, yaml_tree_testing.h), on every description the repository holds, valid and invalid:
// the description checkers get the same line, presence and rejection for every field path and list item.
#include "field_path_lines.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto_to_yaml.h"
#include "rackwise/synthetic_cluster.h"
#include "rackwise/v1/cluster.pb.h"
#include "yaml_stream.h"
#include "yaml_tree_testing.h"

namespace rackwise {
namespace {

namespace fs = std::filesystem;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Compares every path under `message` (read by the stream) that the checkers could ask for.
void ExpectSameLines(const Message& message, const std::string& path, const FieldPathLines& lines,
                     const SourceLines& tree, int* compared) {
  const google::protobuf::Reflection& r = *message.GetReflection();
  for (int i = 0; i < message.GetDescriptor()->field_count(); ++i) {
    const FieldDescriptor& field = *message.GetDescriptor()->field(i);
    const std::string p = path.empty() ? field.name() : path + "." + field.name();
    SCOPED_TRACE(p);
    EXPECT_EQ(lines.Line(p), tree.Line(p));
    EXPECT_EQ(lines.Has(p), tree.Has(p));
    EXPECT_EQ(lines.Rejected(p), tree.Rejected(p));
    ++*compared;
    if (tree.Rejected(p)) continue;  // the tree numbers list items as written, the message as kept
    if (field.is_repeated()) {
      for (int k = 0; k < r.FieldSize(message, &field); ++k) {
        const std::string item = p + "[" + std::to_string(k) + "]";
        EXPECT_EQ(lines.Line(item), tree.Line(item)) << item;
        EXPECT_EQ(lines.Has(item), tree.Has(item)) << item;
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          ExpectSameLines(r.GetRepeatedMessage(message, &field, k), item, lines, tree, compared);
        }
      }
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      ExpectSameLines(r.GetMessage(message, &field), p, lines, tree, compared);
    }
  }
  EXPECT_EQ(lines.Line(path + ".bogus[3].x"), tree.Line(path + ".bogus[3].x"));
}

// Returns the number of paths compared (0 when either reader found the text unusable).
int CompareReaders(const std::string& yaml) {
  v1::ClusterDescription streamed, built;
  LineTable table;
  Diagnostics diagnostics;
  if (!StreamYamlToProto(yaml, "d.yaml", "description", false, &streamed, &table, &diagnostics, 1'000'000)) {
    return 0;
  }
  std::optional<YAML::Node> doc = ParseYamlDocument(yaml, "d.yaml", &diagnostics);
  if (!doc || !doc->IsMap()) return 0;
  SourceLines tree;
  bool aborted = false;
  YamlToProto(*doc, &built, "d.yaml", &tree, &diagnostics, 1'000'000, &aborted);
  if (aborted) return 0;
  const FieldPathLines lines(table, streamed);
  int compared = 0;
  EXPECT_EQ(lines.Line(""), tree.Line(""));
  ExpectSameLines(streamed, "", lines, tree, &compared);
  return compared;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FieldPathLines, AgreesWithTheTreeMappersLinesOnEveryDescriptionFile) {
  const fs::path source = RACKWISE_SOURCE_DIR;
  int files = 0, compared = 0;
  for (const char* dir : {"tests/data/valid", "tests/data/invalid", "examples"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(source / dir)) {
      if (e.path().extension() != ".yaml") continue;
      SCOPED_TRACE(e.path().string());
      int n = CompareReaders(ReadText(e.path()));
      files += n > 0;
      compared += n;
    }
  }
  EXPECT_GT(files, 100);
  EXPECT_GT(compared, 5000);
}

TEST(FieldPathLines, AgreesWithTheTreeMappersLinesOnAWrittenDescription) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 3, 4, 0, 8, 3, 0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18, 0, 8, 2, 0});
  spec.hall_cap_kw = 5000;
  EXPECT_GT(CompareReaders(ProtoToYaml(BuildSyntheticCluster(spec))), 50);
}

TEST(FieldPathLines, WithoutATableEverythingIsUnknown) {
  FieldPathLines none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.Line("racks[0].nodes"), 0);
  EXPECT_FALSE(none.Has(""));
  EXPECT_FALSE(none.Rejected("racks"));
}

}  // namespace
}  // namespace rackwise
