// Where the fields of a message tree read from YAML were written, as integers: one small entry per message, one
// slot per field of it and one int per scalar list item. Descriptions and state files keep their lines here
// rather than as a string path per field, so a state file of 100k allocations costs a few megabytes of lines,
// not hundreds. FieldPathLines (field_path_lines.h) looks the same lines up by path ("racks[2].nodes").
#pragma once

#include <cstdint>
#include <vector>

namespace rackwise {

class LineTable {
 public:
  // A message of the tree: its depth (0: the document) and its place among the messages of that depth.
  struct Ref {
    int depth = 0;
    uint32_t index = 0;
  };

  // Building, in the order the reader meets things. Children of one field of one message must be added one
  // after another (a YAML list is read whole), so they are found again by their first index. `field_count` is
  // the number of fields of the message's type: fields are numbered by their index in the descriptor.
  Ref AddRoot(int line, int field_count);
  Ref AddChild(Ref parent, int field, int line, int field_count);  // to message field `field` of `parent`
  void SetField(Ref m, int field, int key_line);                   // the key was written with a value
  void RejectField(Ref m, int field);                              // ... and that value was reported unusable
  void AddItem(Ref m, int field, int line);                        // a scalar appended to repeated `field`

  // Reading, with the indices of the filled message (children and items only count what was added; callers
  // bound `i` by the size of the message's field).
  Ref Root() const { return {}; }
  Ref Child(Ref parent, int field, int i) const;
  bool Exists(Ref m) const { return Find(m) != nullptr; }
  int Line(Ref m) const;                  // of the message's first key (or the document's start); 0 if unknown
  int FieldLine(Ref m, int field) const;  // of the field's key, else the message's line
  int ItemLine(Ref m, int field, int i) const;
  bool Has(Ref m, int field) const;  // the key was written with a value
  bool Rejected(Ref m, int field) const;

 private:
  struct Entry {
    int32_t line = 0;
    uint32_t first_slot = 0;  // slots_[first_slot, first_slot + field_count) are its fields
    uint32_t field_count = 0;
  };
  struct Slot {
    int32_t key_line = 0;  // 0: not written; negative: written on line -key_line and rejected
    int32_t first = -1;    // first child (next depth) or item of the field; -1: none
  };
  const Entry* Find(Ref m) const;
  const Slot* FindSlot(Ref m, int field) const;
  Slot* FindSlot(Ref m, int field) {
    return const_cast<Slot*>(static_cast<const LineTable*>(this)->FindSlot(m, field));
  }
  Ref Add(int depth, int line, int field_count);

  std::vector<std::vector<Entry>> depths_;
  std::vector<Slot> slots_;
  std::vector<int32_t> items_;
};

}  // namespace rackwise
