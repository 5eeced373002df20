// See yaml_events.h.
#include "yaml_events.h"

#include <yaml.h>

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

// libyaml's event in the source's terms (kFailed for kinds the source never hands out).
void Convert(const yaml_event_t& e, YamlEvent* out) {
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
    : parser_(std::make_unique<Parser>()), max_events_(max_events) {
  if (!yaml_parser_initialize(&parser_->parser)) {
    parser_.reset();
    return;
  }
  yaml_parser_set_input_string(&parser_->parser, reinterpret_cast<const unsigned char*>(yaml.data()), yaml.size());
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
    std::string message = absl::StrCat("YAML syntax error: ", p.problem != nullptr ? p.problem : "unreadable text");
    if (p.context != nullptr) absl::StrAppend(&message, " (", p.context, " on line ", LineOf(p.context_mark), ")");
    return Fail(LineOf(p.problem_mark), std::move(message));
  }
  parser_->has_event = true;
  Convert(parser_->event, &live_);
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
