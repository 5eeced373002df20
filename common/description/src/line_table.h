// Where the fields of a message tree read from YAML were written, as integers: one small entry per message and
// one int per scalar list item. The state reader keeps this instead of SourceLines (a string path per field),
// so a state file of 100k allocations costs a few megabytes of lines, not hundreds.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace rackwise {

class LineTable {
 public:
  // Messages with more fields than this are refused by the reader (the state schema's ClusterState has 6).
  static constexpr int kMaxFields = 6;

  // A message of the tree: its depth (0: the document) and its place among the messages of that depth.
  struct Ref {
    int depth = 0;
    uint32_t index = 0;
  };

  // Building, in the order the reader meets things. Children of one field of one message must be added one
  // after another (a YAML list is read whole), so they are found again by their first index.
  Ref AddRoot(int line);
  Ref AddChild(Ref parent, int field, int line);  // a message added to message field `field` of `parent`
  void SetField(Ref m, int field, int key_line);  // the key was written with a value
  void RejectField(Ref m, int field);             // ... and that value was reported unusable
  void AddItem(Ref m, int field, int line);       // a scalar appended to repeated field `field`

  // Reading, with the indices of the filled message (children and items only count what was added).
  Ref Root() const { return {}; }
  Ref Child(Ref parent, int field, int i) const;
  int Line(Ref m) const;                  // of the message's first key (or the document's start); 0 if unknown
  int FieldLine(Ref m, int field) const;  // of the field's key, else the message's line
  int ItemLine(Ref m, int field, int i) const;
  bool Has(Ref m, int field) const;  // the key was written with a value
  bool Rejected(Ref m, int field) const;

 private:
  struct Entry {
    Entry() { first.fill(-1); }
    int32_t line = 0;
    std::array<int32_t, kMaxFields> field_line{};
    std::array<int32_t, kMaxFields> first;  // first child (next depth) or item of each field; -1: none
    uint8_t has = 0;                        // bit per field
    uint8_t rejected = 0;
  };
  static_assert(kMaxFields <= 8, "one bit per field in Entry::has and Entry::rejected");
  const Entry* Find(Ref m) const;
  Entry* Find(Ref m) { return const_cast<Entry*>(static_cast<const LineTable*>(this)->Find(m)); }

  std::vector<std::vector<Entry>> depths_;
  std::vector<int32_t> items_;
};

}  // namespace rackwise
