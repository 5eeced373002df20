// See line_table.h. Lookups of things never recorded answer 0 / false rather than failing: a checker asking
// for the line of a field that was absent gets the message's line.
#include "line_table.h"

#include <cstddef>
#include <cstdlib>

namespace rackwise {

LineTable::Ref LineTable::Add(int depth, int line, int field_count) {
  size_t d = static_cast<size_t>(depth);
  if (depths_.size() <= d) depths_.resize(d + 1);
  Ref ref{depth, static_cast<uint32_t>(depths_[d].size())};
  Entry e;
  e.line = line;
  e.first_slot = static_cast<uint32_t>(slots_.size());
  e.field_count = field_count > 0 ? static_cast<uint32_t>(field_count) : 0;
  depths_[d].push_back(e);
  slots_.resize(slots_.size() + e.field_count);
  return ref;
}

LineTable::Ref LineTable::AddRoot(int line, int field_count) {
  depths_.clear();
  slots_.clear();
  items_.clear();
  return Add(0, line, field_count);
}

LineTable::Ref LineTable::AddChild(Ref parent, int field, int line, int field_count) {
  Ref child = Add(parent.depth + 1, line, field_count);
  if (Slot* s = FindSlot(parent, field); s != nullptr && s->first < 0) s->first = static_cast<int32_t>(child.index);
  return child;
}

void LineTable::SetField(Ref m, int field, int key_line) {
  if (Slot* s = FindSlot(m, field)) s->key_line = key_line > 0 ? key_line : 1;  // a written key has a line
}

void LineTable::RejectField(Ref m, int field) {
  if (Slot* s = FindSlot(m, field); s != nullptr && s->key_line > 0) s->key_line = -s->key_line;
}

void LineTable::AddItem(Ref m, int field, int line) {
  Slot* s = FindSlot(m, field);
  if (s == nullptr) return;
  if (s->first < 0) s->first = static_cast<int32_t>(items_.size());
  items_.push_back(line);
}

LineTable::Ref LineTable::Child(Ref parent, int field, int i) const {
  const Slot* s = FindSlot(parent, field);
  uint32_t first = s != nullptr && s->first >= 0 && i >= 0 ? static_cast<uint32_t>(s->first) : UINT32_MAX;
  return {parent.depth + 1, first == UINT32_MAX ? UINT32_MAX : first + static_cast<uint32_t>(i)};
}

int LineTable::Line(Ref m) const {
  const Entry* e = Find(m);
  return e == nullptr ? 0 : e->line;
}

int LineTable::FieldLine(Ref m, int field) const {
  const Slot* s = FindSlot(m, field);
  return s != nullptr && s->key_line != 0 ? std::abs(s->key_line) : Line(m);
}

int LineTable::ItemLine(Ref m, int field, int i) const {
  const Slot* s = FindSlot(m, field);
  if (s == nullptr || s->first < 0 || i < 0) return Line(m);
  size_t at = static_cast<size_t>(s->first) + static_cast<size_t>(i);
  return at < items_.size() ? items_[at] : Line(m);
}

bool LineTable::Has(Ref m, int field) const {
  const Slot* s = FindSlot(m, field);
  return s != nullptr && s->key_line != 0;
}

bool LineTable::Rejected(Ref m, int field) const {
  const Slot* s = FindSlot(m, field);
  return s != nullptr && s->key_line < 0;
}

const LineTable::Entry* LineTable::Find(Ref m) const {
  if (m.depth < 0 || static_cast<size_t>(m.depth) >= depths_.size()) return nullptr;
  const std::vector<Entry>& at = depths_[static_cast<size_t>(m.depth)];
  return m.index < at.size() ? &at[m.index] : nullptr;
}

const LineTable::Slot* LineTable::FindSlot(Ref m, int field) const {
  const Entry* e = Find(m);
  if (e == nullptr || field < 0 || static_cast<uint32_t>(field) >= e->field_count) return nullptr;
  return &slots_[e->first_slot + static_cast<uint32_t>(field)];
}

}  // namespace rackwise
