// See line_table.h. Lookups of things never recorded answer 0 / false rather than failing: a checker asking
// for the line of a field that was absent gets the message's line, as with SourceLines.
#include "line_table.h"

#include <cstddef>

namespace rackwise {
namespace {

bool ValidField(int field) { return field >= 0 && field < LineTable::kMaxFields; }

}  // namespace

LineTable::Ref LineTable::AddRoot(int line) {
  depths_.assign(1, {});
  items_.clear();
  depths_[0].push_back({});
  depths_[0][0].line = line;
  return Root();
}

LineTable::Ref LineTable::AddChild(Ref parent, int field, int line) {
  Entry* p = Find(parent);
  size_t depth = static_cast<size_t>(parent.depth) + 1;
  if (depths_.size() <= depth) depths_.resize(depth + 1);
  Ref child{static_cast<int>(depth), static_cast<uint32_t>(depths_[depth].size())};
  if (p != nullptr && ValidField(field) && p->first[field] < 0) p->first[field] = static_cast<int32_t>(child.index);
  depths_[depth].push_back({});
  depths_[depth].back().line = line;
  return child;
}

void LineTable::SetField(Ref m, int field, int key_line) {
  Entry* e = Find(m);
  if (e == nullptr || !ValidField(field)) return;
  e->field_line[field] = key_line;
  e->has |= 1u << field;
}

void LineTable::RejectField(Ref m, int field) {
  if (Entry* e = Find(m); e != nullptr && ValidField(field)) e->rejected |= 1u << field;
}

void LineTable::AddItem(Ref m, int field, int line) {
  Entry* e = Find(m);
  if (e == nullptr || !ValidField(field)) return;
  if (e->first[field] < 0) e->first[field] = static_cast<int32_t>(items_.size());
  items_.push_back(line);
}

LineTable::Ref LineTable::Child(Ref parent, int field, int i) const {
  const Entry* p = Find(parent);
  uint32_t first = p != nullptr && ValidField(field) && p->first[field] >= 0 ? p->first[field] : UINT32_MAX;
  return {parent.depth + 1, first == UINT32_MAX ? UINT32_MAX : first + static_cast<uint32_t>(i)};
}

int LineTable::Line(Ref m) const {
  const Entry* e = Find(m);
  return e == nullptr ? 0 : e->line;
}

int LineTable::FieldLine(Ref m, int field) const {
  const Entry* e = Find(m);
  if (e == nullptr) return 0;
  return Has(m, field) ? e->field_line[field] : e->line;
}

int LineTable::ItemLine(Ref m, int field, int i) const {
  const Entry* e = Find(m);
  if (e == nullptr || !ValidField(field) || e->first[field] < 0) return Line(m);
  size_t at = static_cast<size_t>(e->first[field]) + static_cast<size_t>(i);
  return at < items_.size() ? items_[at] : e->line;
}

bool LineTable::Has(Ref m, int field) const {
  const Entry* e = Find(m);
  return e != nullptr && ValidField(field) && (e->has >> field & 1u);
}

bool LineTable::Rejected(Ref m, int field) const {
  const Entry* e = Find(m);
  return e != nullptr && ValidField(field) && (e->rejected >> field & 1u);
}

const LineTable::Entry* LineTable::Find(Ref m) const {
  if (m.depth < 0 || static_cast<size_t>(m.depth) >= depths_.size()) return nullptr;
  const std::vector<Entry>& at = depths_[static_cast<size_t>(m.depth)];
  return m.index < at.size() ? &at[m.index] : nullptr;
}

}  // namespace rackwise
