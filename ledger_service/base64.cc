// See base64.h. OpenSSL's block coder does the work; its decoder accepts whitespace and reports the length
// before padding is removed, so the input is checked first and the padding taken off after.
#include "base64.h"

#include <openssl/evp.h>

#include "absl/strings/str_cat.h"

namespace rackwise::ledger {

std::string Base64Encode(absl::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

absl::StatusOr<std::string> Base64Decode(absl::string_view text) {
  if (text.size() % 4 != 0)
    return absl::InvalidArgumentError(absl::StrCat("base64 of length ", text.size(), " is not a multiple of 4"));
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    if (!IsBase64Char(text[i]))
      return absl::InvalidArgumentError(absl::StrCat("base64: unexpected character at offset ", i));
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return absl::InvalidArgumentError("base64: not decodable");
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

}  // namespace rackwise::ledger
