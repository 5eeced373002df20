// See yaml_events.h.
#include "yaml_events.h"

#include <yaml.h>

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "yaml_scalar.h"

namespace rackwise {

struct YamlEventSource::Parser {
  yaml_parser_t parser;
  yaml_event_t event;
  bool has_event = false;
};

namespace {

// Reuses `out`'s buffer: one event is converted per value of a 100k-allocation file.
void Assign(const yaml_char_t* s, std::string* out) {
  if (s == nullptr) {
    out->clear();
  } else {
    out->assign(reinterpret_cast<const char*>(s));
  }
}

int LineOf(const yaml_mark_t& mark) { return static_cast<int>(mark.line) + 1; }

// The printable ASCII character at `mark` in `text` (0 for anything else): libyaml's marks count characters
// (UTF-8 sequences), not bytes, within their line.
char CharacterAt(std::string_view text, const yaml_mark_t& mark) {
  size_t at = 0;
  for (size_t line = 0; line < mark.line && at < text.size(); ++at) line += text[at] == '\n';
  for (size_t column = 0; at < text.size() && column <= mark.column; ++at) {
    bool starts_character = (static_cast<unsigned char>(text[at]) & 0xc0) != 0x80;
    if (starts_character && column++ == mark.column) break;
  }
  return at < text.size() && text[at] > ' ' && text[at] < 0x7f ? text[at] : 0;
}

// libyaml refuses text that is not UTF-8 before any value is read, with no word of which field holds it. So
// such text is read with each stray byte B standing as the private-use character U+10FF00+B, turned back into
// B in the values (Convert): the field holding it then reports "not valid UTF-8 text" with its path and line.
// Valid text is read as it is; in text that is not, a character of that range written as such also turns into
// a stray byte, which only adds one more report to a text refused anyway.
constexpr uint32_t kStrayByteBase = 0x10ff00;

void AppendStrayByte(unsigned char b, std::string* out) {
  uint32_t cp = kStrayByteBase + b;
  out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
  out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
  out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
  out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
}

std::string EscapeStrayBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    size_t length = 1;
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (c < 0x80 || (i + length <= text.size() && IsUtf8(text.substr(i, length)))) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      AppendStrayByte(c, &out);
      ++i;
    }
  }
  return out;
}

// The inverse of EscapeStrayBytes on one value.
void RestoreStrayBytes(std::string* value) {
  size_t w = 0;
  for (size_t r = 0; r < value->size(); ++w) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(value->data()) + r;
    if (value->size() - r >= 4 && p[0] == 0xf4 && p[1] == 0x8f && (p[2] & 0xfe) == 0xbe) {
      (*value)[w] = static_cast<char>(((p[2] & 0x3) << 6) | (p[3] & 0x3f));
      r += 4;
    } else {
      (*value)[w] = (*value)[r++];
    }
  }
  value->resize(w);
}

// libyaml's event in the source's terms (kFailed for kinds the source never hands out).
void Convert(const yaml_event_t& e, bool stray_bytes, YamlEvent* out) {
  out->line = LineOf(e.start_mark);
  out->value.clear();
  out->anchor.clear();
  out->tag.clear();
  out->quoted = false;
  switch (e.type) {
    case YAML_STREAM_START_EVENT: out->kind = YamlEvent::kStreamStart; break;
    case YAML_STREAM_END_EVENT: out->kind = YamlEvent::kStreamEnd; break;
    case YAML_DOCUMENT_START_EVENT: out->kind = YamlEvent::kDocumentStart; break;
    case YAML_DOCUMENT_END_EVENT: out->kind = YamlEvent::kDocumentEnd; break;
    case YAML_ALIAS_EVENT:
      out->kind = YamlEvent::kAlias;
      Assign(e.data.alias.anchor, &out->value);
      break;
    case YAML_SCALAR_EVENT: {
      out->kind = YamlEvent::kScalar;
      out->value.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
      if (stray_bytes) RestoreStrayBytes(&out->value);
      Assign(e.data.scalar.anchor, &out->anchor);
      Assign(e.data.scalar.tag, &out->tag);
      // As yaml-cpp: block and quoted scalars, and the non-specific tag "!", are strings whatever they hold.
      out->quoted = e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE || out->tag == "!";
      if (out->tag == "!") out->tag.clear();
      break;
    }
    case YAML_SEQUENCE_START_EVENT:
      out->kind = YamlEvent::kListStart;
      Assign(e.data.sequence_start.anchor, &out->anchor);
      break;
    case YAML_SEQUENCE_END_EVENT: out->kind = YamlEvent::kListEnd; break;
    case YAML_MAPPING_START_EVENT:
      out->kind = YamlEvent::kMapStart;
      Assign(e.data.mapping_start.anchor, &out->anchor);
      break;
    case YAML_MAPPING_END_EVENT: out->kind = YamlEvent::kMapEnd; break;
    default: out->kind = YamlEvent::kFailed;
  }
}

}  // namespace

bool YamlEvent::IsNull() const {
  return kind == kScalar && !quoted && tag.empty() &&
         (value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL");
}

std::string YamlEvent::Describe() const {
  switch (kind) {
    case kMapStart: return "a map";
    case kListStart: return "a list";
    case kScalar: return IsNull() ? "nothing" : DescribeScalar(value);
    default: return "nothing";
  }
}

YamlEventSource::YamlEventSource(std::string_view yaml, size_t max_events)
    : parser_(std::make_unique<Parser>()), text_(yaml), max_events_(max_events) {
  if (!IsUtf8(yaml)) {
    escaped_ = EscapeStrayBytes(yaml);
    text_ = escaped_;
  }
  if (!yaml_parser_initialize(&parser_->parser)) {
    parser_.reset();
    return;
  }
  yaml_parser_set_input_string(&parser_->parser, reinterpret_cast<const unsigned char*>(text_.data()), text_.size());
}

YamlEventSource::~YamlEventSource() {
  if (parser_ == nullptr) return;
  if (parser_->has_event) yaml_event_delete(&parser_->event);
  yaml_parser_delete(&parser_->parser);
}

bool YamlEventSource::Fail(int line, std::string message) {
  failed_ = true;
  error_line_ = line;
  error_ = std::move(message);
  live_.kind = YamlEvent::kFailed;
  current_ = &live_;
  return false;
}

bool YamlEventSource::Next() {
  if (failed_) return false;
  if (++events_ > max_events_) {
    over_budget_ = true;
    return Fail(current_->line, absl::StrCat("document too large: more than ", max_events_,
                                             " values (aliases are counted each time they are used)"));
  }
  while (!replay_.empty() && replay_.back().next == replay_.back().end) replay_.pop_back();
  if (!replay_.empty()) {
    current_ = &recorded_[replay_.back().next++];
    return true;
  }
  current_ = &live_;
  return ReadLive();
}

void YamlEventSource::FollowAlias() {
  if (failed_ || current_->kind != YamlEvent::kAlias) return;
  auto it = anchors_.find(current_->value);
  if (it == anchors_.end()) {  // ReadLive refuses these; a replayed alias was checked when it was read
    Fail(current_->line, absl::StrCat("YAML syntax error: unknown anchor '", current_->value, "'"));
    return;
  }
  replay_.push_back(it->second);
  --events_;  // the alias itself is not a value
  Next();
}

bool YamlEventSource::ReadLive() {
  if (parser_ == nullptr) return Fail(0, "cannot read YAML: out of memory");
  if (parser_->has_event) yaml_event_delete(&parser_->event);
  parser_->has_event = false;
  if (!yaml_parser_parse(&parser_->parser, &parser_->event)) {
    const yaml_parser_t& p = parser_->parser;
    std::string problem = p.problem != nullptr ? p.problem : "unreadable text";
    // libyaml's words when a value cannot start here (",cluster: x"): name what stands there instead.
    char found = problem == "did not find expected node content" ? CharacterAt(text_, p.problem_mark) : 0;
    if (found != 0) problem = absl::StrCat("unexpected character '", std::string(1, found), "': ", problem);
    std::string message = absl::StrCat("YAML syntax error: ", problem);
    if (p.context != nullptr) absl::StrAppend(&message, " (", p.context, " on line ", LineOf(p.context_mark), ")");
    return Fail(LineOf(p.problem_mark), std::move(message));
  }
  parser_->has_event = true;
  Convert(parser_->event, !escaped_.empty(), &live_);
  if (live_.kind == YamlEvent::kFailed) return Fail(live_.line, "YAML syntax error: unexpected event");
  if (live_.kind == YamlEvent::kAlias && !anchors_.contains(live_.value)) {
    return Fail(live_.line, absl::StrCat("YAML syntax error: alias '*", live_.value,
                                         "' names no anchor defined (and complete) before it"));
  }
  Record();
  // libyaml's scanner spends time in proportion to the open flow levels on every token: without a bound, a line
  // of 200,000 '[' takes minutes.
  if (live_depth_ > kMaxDepth) {
    return Fail(live_.line, absl::StrCat("YAML syntax error: nested more than ", kMaxDepth, " levels deep"));
  }
  return true;
}

// Keeps the events of anchored nodes. One buffer serves nested anchors: each is a range of it.
void YamlEventSource::Record() {
  bool starts_node =
      live_.kind == YamlEvent::kScalar || live_.kind == YamlEvent::kListStart || live_.kind == YamlEvent::kMapStart;
  if (starts_node && !live_.anchor.empty()) open_.push_back({live_.anchor, recorded_.size(), live_depth_});
  if (!open_.empty()) recorded_.push_back(live_);
  if (live_.kind == YamlEvent::kListStart || live_.kind == YamlEvent::kMapStart) ++live_depth_;
  if (live_.kind == YamlEvent::kListEnd || live_.kind == YamlEvent::kMapEnd) --live_depth_;
  while (!open_.empty() && open_.back().depth == live_depth_) {
    anchors_.insert_or_assign(open_.back().name, Cursor{open_.back().begin, recorded_.size()});
    open_.pop_back();
  }
}

}  // namespace rackwise
