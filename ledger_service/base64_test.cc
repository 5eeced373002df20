#include "base64.h"

#include <gtest/gtest.h>

namespace rackwise::ledger {
namespace {

TEST(Base64, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>(i * 37));
    absl::StatusOr<std::string> back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, bytes);
  }
}

TEST(Base64, KnownVectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Base64Decode("Zm9vYg=="), "foob");
  EXPECT_EQ(*Base64Decode("Zm8="), "fo");
}

TEST(Base64, RefusesWhatIsNotPaddedBase64) {
  EXPECT_EQ(Base64Decode("Zm9").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64Decode("Zm 9").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64Decode("Zm9*").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rackwise::ledger
