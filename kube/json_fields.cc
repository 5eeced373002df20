// Go-compatible JSON field lookup, a depth-bounded parse into a DOM, and a small, allocation-free JSON string writer.
#include "json_fields.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

bool EqualsIgnoreCase(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

const Json* FindField(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end()) {
    for (auto i = object.begin(); i != object.end(); ++i) {
      if (EqualsIgnoreCase(i.key(), key)) {
        it = i;
        break;
      }
    }
  }
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string StringField(const Json& object, absl::string_view key) {
  const Json* v = FindField(object, key);
  if (v == nullptr || !v->is_string()) return "";
  return v->get<std::string>();
}

const Json* FindPath(const Json& object, std::initializer_list<absl::string_view> path) {
  const Json* cur = &object;
  for (absl::string_view key : path) {
    cur = FindField(*cur, key);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t Utf8Length(absl::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

// Refuses nesting deeper than kMaxJsonDepth without recursion. Returns the offset where it gets too deep.
absl::Status CheckDepth(absl::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return absl::InvalidArgumentError(
            absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels at byte ", i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    // Plain ASCII runs (node names, reasons) are appended in one go.
    size_t run = i;
    while (run < text.size()) {
      unsigned char r = static_cast<unsigned char>(text[run]);
      if (r < 0x20 || r >= 0x80 || r == '"' || r == '\\') break;
      ++run;
    }
    if (run > i) {
      out->append(text.data() + i, run - i);
      i = run;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out->append("\\\"");
        ++i;
        continue;
      case '\\':
        out->append("\\\\");
        ++i;
        continue;
      case '\n':
        out->append("\\n");
        ++i;
        continue;
      case '\r':
        out->append("\\r");
        ++i;
        continue;
      case '\t':
        out->append("\\t");
        ++i;
        continue;
      default: break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
      ++i;
      continue;
    }
    size_t n = Utf8Length(text, i);
    if (n == 0) {
      out->append("\xef\xbf\xbd");
      ++i;
    } else {
      out->append(text.data() + i, n);
      i += n;
    }
  }
  out->push_back('"');
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view body) {
  if (absl::Status depth = CheckDepth(body); !depth.ok()) return depth;
  Json root = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Re-run with exceptions to learn the position; caught here, never escapes.
    try {
      Json discarded = Json::parse(body.begin(), body.end());
      (void)discarded;
    } catch (const Json::parse_error& e) {
      return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", e.byte, ": ", e.what()));
    } catch (...) {
    }
    return absl::InvalidArgumentError("invalid JSON");
  }
  if (!root.is_object()) return absl::InvalidArgumentError("expected a JSON object");
  return root;
}

}  // namespace rackwise::k8s
