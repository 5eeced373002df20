// The ExtenderArgs top-level scanner (see args_scanner.h).
#include "args_scanner.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s::internal {
namespace {

class Scanner {
 public:
  explicit Scanner(absl::string_view s) : s_(s) {}

  size_t pos() const { return i_; }
  bool AtEnd() const { return i_ >= s_.size(); }
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void Advance(size_t n) { i_ += n; }
  absl::string_view Rest() const { return s_.substr(i_); }
  absl::string_view Span(size_t from) const { return s_.substr(from, i_ - from); }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  bool Literal(absl::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", i_, ": ", what));
  }

  // Reads a JSON string (at its opening quote) into *out (nullptr: skip). Decodes escapes.
  absl::Status String(std::string* out) {
    if (!Consume('"')) return Error("expected a string");
    if (out) out->clear();
    for (;;) {
      size_t run = i_;
      while (run < s_.size()) {
        unsigned char c = static_cast<unsigned char>(s_[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++run;
      }
      if (out) out->append(s_.data() + i_, run - i_);
      i_ = run;
      if (AtEnd()) return Error("unterminated string");
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return absl::OkStatus();
      }
      if (c != '\\') return Error("control character in a string");
      ++i_;
      if (AtEnd()) return Error("unterminated escape");
      char e = s_[i_++];
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return Error("bad \\u escape");
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            uint32_t lo = 0;
            if (!Literal("\\u") || !Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return Error("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return Error("bad surrogate pair");
          }
          if (out) AppendUtf8(cp, out);
          continue;
        }
        default: return Error("bad escape");
      }
      if (out) out->push_back(plain);
    }
  }

  // Skips one JSON value and returns its text (validated later by the caller's parser).
  absl::Status SkipValue(absl::string_view* text) {
    size_t start = i_;
    char c = Peek();
    if (c == '"') {
      if (absl::Status s = String(nullptr); !s.ok()) return s;
    } else if (c == '{' || c == '[') {
      int depth = 0;
      while (!AtEnd()) {
        char d = s_[i_];
        if (d == '"') {
          if (absl::Status s = String(nullptr); !s.ok()) return s;
          continue;
        }
        ++i_;
        if ((d == '{' || d == '[') && ++depth > kMaxJsonDepth - 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels at byte ", i_ - 1));
        }
        if (d == '}' || d == ']') {
          if (--depth == 0) break;
        }
      }
      if (depth != 0) return Error("unbalanced brackets");
    } else {
      while (!AtEnd() && std::strchr("-+.0123456789eEtruefalsn", s_[i_]) != nullptr) ++i_;
      if (i_ == start) return Error("expected a value");
    }
    *text = s_.substr(start, i_ - start);
    return absl::OkStatus();
  }

 private:
  bool Hex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      *v <<= 4;
      if (h >= '0' && h <= '9') {
        *v |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        *v |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        *v |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  absl::string_view s_;
  size_t i_ = 0;
};

absl::Status ParseValue(absl::string_view text, size_t offset, absl::string_view field, Json* out) {
  *out = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    *out = Json();
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON in ", field, " (starting at byte ", offset, ")"));
  }
  return absl::OkStatus();
}

// Reads the NodeNames array (at its '['), keeping each name's JSON text for the answers.
absl::Status ScanNodeNames(Scanner& sc, CandidateNodeCache* cache, std::shared_ptr<const CandidateNodes>* out) {
  const size_t start = sc.pos();
  sc.Consume('[');
  CandidateNodes nodes;
  std::string name;
  sc.Ws();
  if (!sc.Consume(']')) {
    for (;;) {
      sc.Ws();
      if (sc.AtEnd()) return sc.Error("unexpected end of input in NodeNames");
      if (sc.Peek() != '"') {
        return absl::InvalidArgumentError(absl::StrCat("NodeNames[", nodes.size(), "]: expected a string"));
      }
      const size_t token = sc.pos();
      if (absl::Status s = sc.String(&name); !s.ok()) return s;
      nodes.Add(std::move(name), sc.Span(token));
      sc.Ws();
      if (sc.Consume(']')) break;
      if (!sc.Consume(',')) return sc.Error("expected ',' or ']' in NodeNames");
    }
  }
  if (cache != nullptr) {
    *out = cache->Insert(sc.Span(start), std::move(nodes));
  } else {
    *out = std::make_shared<const CandidateNodes>(std::move(nodes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ScanExtenderArgs(absl::string_view body, CandidateNodeCache* cache, TopLevelArgs* out) {
  Scanner sc(body);
  sc.Ws();
  if (!sc.Consume('{')) return sc.Error("expected a JSON object");
  sc.Ws();
  if (!sc.Consume('}')) {
    std::string key;
    for (;;) {
      sc.Ws();
      if (absl::Status s = sc.String(&key); !s.ok()) return s;
      sc.Ws();
      if (!sc.Consume(':')) return sc.Error("expected ':'");
      sc.Ws();
      if (EqualsIgnoreCase(key, "NodeNames")) {
        out->node_names = nullptr;
        out->has_node_names = false;
        if (sc.Literal("null")) {
          // absent
        } else if (sc.Peek() == '[') {
          out->has_node_names = true;
          size_t length = 0;
          if (cache != nullptr && (out->node_names = cache->Match(sc.Rest(), &length)) != nullptr) {
            sc.Advance(length);
          } else if (absl::Status s = ScanNodeNames(sc, cache, &out->node_names); !s.ok()) {
            return s;
          }
        } else {
          return absl::InvalidArgumentError("NodeNames: expected an array of strings");
        }
      } else {
        size_t at = sc.pos();
        absl::string_view text;
        if (absl::Status s = sc.SkipValue(&text); !s.ok()) return s;
        Json value;
        if (absl::Status s = ParseValue(text, at, key, &value); !s.ok()) return s;
        if (EqualsIgnoreCase(key, "Pod")) {
          out->pod = std::move(value);
        } else if (EqualsIgnoreCase(key, "Nodes")) {
          out->nodes = std::move(value);
        }
      }
      sc.Ws();
      if (sc.Consume('}')) break;
      if (!sc.Consume(',')) return sc.Error("expected ',' or '}'");
    }
  }
  sc.Ws();
  if (!sc.AtEnd()) return sc.Error("unexpected data after the object");
  return absl::OkStatus();
}

}  // namespace rackwise::k8s::internal
