// The node's directories (created with their parents, refused when untrustworthy) and whole-file writes.
#include "node_power/node_files.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rackwise::node_power {
namespace {

using ::testing::HasSubstr;

class NodeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_node_files.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(NodeFilesTest, MissingParentsAreCreatedWithMode0755) {
  const std::string deep = dir_ + "/var/lib/rackwise/g1";
  ASSERT_TRUE(MakeTrustedDirectory(deep).ok());
  for (const std::string& level : {dir_ + "/var", dir_ + "/var/lib", dir_ + "/var/lib/rackwise", deep}) {
    EXPECT_TRUE(std::filesystem::is_directory(level)) << level;
    EXPECT_EQ(std::filesystem::status(level).permissions(), std::filesystem::perms(0755)) << level;
  }
  EXPECT_TRUE(MakeTrustedDirectory(deep).ok());  // again: already there
}

TEST_F(NodeFilesTest, AFileInTheWayOrAWorldWritableDirectoryIsRefused) {
  std::ofstream(dir_ + "/file") << "x";
  absl::Status blocked = MakeTrustedDirectory(dir_ + "/file/sub");
  EXPECT_FALSE(blocked.ok());
  EXPECT_THAT(blocked.message(), HasSubstr("cannot create directory " + dir_ + "/file/sub"));
  absl::Status not_dir = MakeTrustedDirectory(dir_ + "/file");
  EXPECT_THAT(not_dir.message(), HasSubstr(dir_ + "/file exists and is not a directory"));

  ASSERT_EQ(mkdir((dir_ + "/open").c_str(), 0755), 0);
  ASSERT_EQ(chmod((dir_ + "/open").c_str(), 0777), 0);
  absl::Status open = MakeTrustedDirectory(dir_ + "/open");
  EXPECT_EQ(open.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(open.message(), HasSubstr("is writable by every user (mode 0777): chmod o-w"));
}

TEST_F(NodeFilesTest, WritesReplaceTheWholeFileAndLeaveNoTemporary) {
  const std::string path = dir_ + "/copy.yaml";
  ASSERT_TRUE(WriteFileAtomically(path, "first version, longer\n", 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second\n", 0644).ok());
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "second\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
  EXPECT_EQ(ReadWholeFile(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace rackwise::node_power
