// Slurm hostlist expansion and compression ("gpu[001-018]", "r[1-2]n[01-02]", "a,b[1,3-4]").
// Expansion first parses every item into literal text and bracket groups and counts the names it would produce,
// so a hostile range ("n[0-999999999999]") is refused before anything is allocated.
#include "rackwise/hostlist.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rackwise {
namespace {

constexpr size_t kMaxDigits = 18;       // fits in uint64 with room for hi - lo + 1
constexpr size_t kMaxNameLength = 255;  // a host name (DNS allows 253); also bounds the memory of an expansion

struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;  // zero padding: the length of the lower bound as written
};

// One piece of an item: literal text, or a bracket group of ranges.
struct Piece {
  std::string text;
  std::vector<Range> ranges;  // empty: a literal
};

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// The hostlist as quoted in messages: printable, and cut short when long.
std::string Quote(std::string_view s) {
  constexpr size_t kMaxQuoted = 80;
  bool cut = s.size() > kMaxQuoted;
  if (cut) s = s.substr(0, kMaxQuoted);
  std::string out;
  for (char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
  }
  return absl::StrCat("'", out, cut ? "..." : "", "'");
}

absl::Status Invalid(std::string_view hostlist, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("bad hostlist ", Quote(hostlist), ": ", std::string(what)));
}

absl::StatusOr<uint64_t> ParseNumber(std::string_view digits, std::string_view hostlist) {
  if (digits.empty()) return Invalid(hostlist, "empty number in brackets");
  for (char c : digits) {
    if (c < '0' || c > '9') return Invalid(hostlist, absl::StrCat("not a number in brackets: ", Quote(digits)));
  }
  if (digits.size() > kMaxDigits) return Invalid(hostlist, absl::StrCat("number too long: ", Quote(digits)));
  uint64_t value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

// Parses the inside of one bracket group: "1-3,07,10-12".
absl::StatusOr<std::vector<Range>> ParseRanges(std::string_view inside, std::string_view hostlist) {
  std::vector<Range> ranges;
  if (inside.empty()) return Invalid(hostlist, "empty brackets");
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    if (comma == std::string_view::npos) comma = inside.size();
    std::string_view part = inside.substr(start, comma - start);
    if (part.empty()) return Invalid(hostlist, "empty element in brackets");
    size_t dash = part.find('-');
    std::string_view lo_text = part.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    absl::StatusOr<uint64_t> lo = ParseNumber(lo_text, hostlist);
    if (!lo.ok()) return lo.status();
    absl::StatusOr<uint64_t> hi = ParseNumber(hi_text, hostlist);
    if (!hi.ok()) return hi.status();
    if (*hi < *lo) return Invalid(hostlist, absl::StrCat("range ", std::string(part), " ends below its start"));
    ranges.push_back(Range{*lo, *hi, lo_text.size()});
    start = comma + 1;
  }
  return ranges;
}

// Splits a hostlist at the commas outside brackets.
absl::StatusOr<std::vector<std::string_view>> SplitItems(std::string_view hostlist) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    char c = i < hostlist.size() ? hostlist[i] : ',';
    if (c == '[') {
      if (depth > 0) return Invalid(hostlist, "nested '['");
      ++depth;
    } else if (c == ']') {
      if (depth == 0) return Invalid(hostlist, "']' without '['");
      --depth;
    } else if (c == ',' && depth == 0) {
      if (i == hostlist.size() && depth != 0) break;
      std::string_view item = hostlist.substr(start, i - start);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (item.empty()) return Invalid(hostlist, "empty node name");
      items.push_back(item);
      start = i + 1;
    }
  }
  if (depth != 0) return Invalid(hostlist, "'[' without ']'");
  return items;
}

absl::StatusOr<std::vector<Piece>> ParseItem(std::string_view item, std::string_view hostlist) {
  std::vector<Piece> pieces;
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      size_t close = item.find(']', i);  // SplitItems guarantees it exists and nothing nests
      absl::StatusOr<std::vector<Range>> ranges = ParseRanges(item.substr(i + 1, close - i - 1), hostlist);
      if (!ranges.ok()) return ranges.status();
      pieces.push_back(Piece{"", *std::move(ranges)});
      i = close + 1;
      continue;
    }
    size_t end = i;
    while (end < item.size() && item[end] != '[') {
      if (!IsNameChar(item[end])) {
        return Invalid(hostlist, absl::StrCat("invalid character ", Quote(item.substr(end, 1)), " in node name"));
      }
      ++end;
    }
    pieces.push_back(Piece{std::string(item.substr(i, end - i)), {}});
    i = end;
  }
  return pieces;
}

// The length of the longest name the pieces expand to.
size_t LongestName(const std::vector<Piece>& pieces) {
  size_t length = 0;
  for (const Piece& piece : pieces) {
    if (piece.ranges.empty()) {
      length += piece.text.size();
      continue;
    }
    size_t widest = 0;
    for (const Range& r : piece.ranges) widest = std::max({widest, r.width, std::to_string(r.hi).size()});
    length += widest;
  }
  return length;
}

// How many names the pieces expand to, or max + 1 when that is more than `max`.
uint64_t CountNames(const std::vector<Piece>& pieces, uint64_t max) {
  uint64_t total = 1;
  for (const Piece& piece : pieces) {
    if (piece.ranges.empty()) continue;
    uint64_t group = 0;
    for (const Range& r : piece.ranges) {
      uint64_t n = r.hi - r.lo + 1;  // no overflow: at most 18 digits
      group += n;
      if (group > max) return max + 1;
    }
    if (total > max / group) return max + 1;  // total * group > max
    total *= group;
  }
  return total;
}

std::string Padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Appends every name of one item, leftmost bracket group varying slowest (Slurm's order). Iterative (an
// odometer over the bracket groups), so a name with thousands of groups cannot exhaust the stack.
void Expand(const std::vector<Piece>& pieces, std::vector<std::string>* out) {
  struct Digit {
    size_t range = 0;
    uint64_t value = 0;
  };
  std::vector<Digit> odometer(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (!pieces[k].ranges.empty()) odometer[k].value = pieces[k].ranges[0].lo;
  }
  std::string name;
  while (true) {
    name.clear();
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece& p = pieces[k];
      name += p.ranges.empty() ? p.text : Padded(odometer[k].value, p.ranges[odometer[k].range].width);
    }
    out->push_back(name);
    bool advanced = false;
    for (size_t k = pieces.size(); k-- > 0 && !advanced;) {
      const Piece& p = pieces[k];
      if (p.ranges.empty()) continue;
      Digit& d = odometer[k];
      if (d.value < p.ranges[d.range].hi) {
        ++d.value;
        advanced = true;
      } else if (d.range + 1 < p.ranges.size()) {
        ++d.range;
        d.value = p.ranges[d.range].lo;
        advanced = true;
      } else {
        d = Digit{0, p.ranges[0].lo};
      }
    }
    if (!advanced) return;
  }
}

// A name split around its last run of digits: "r1n07x" -> ("r1n", "07", "x").
struct SplitName {
  std::string_view prefix;
  std::string_view digits;
  std::string_view suffix;
};

SplitName SplitAtLastNumber(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && !(name[end - 1] >= '0' && name[end - 1] <= '9')) --end;
  size_t begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  if (begin == end) return {name, {}, {}};
  return {name.substr(0, begin), name.substr(begin, end - begin), name.substr(end)};
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, size_t max_names) {
  absl::StatusOr<std::vector<std::string_view>> items = SplitItems(hostlist);
  if (!items.ok()) return items.status();
  std::vector<std::vector<Piece>> parsed;
  uint64_t total = 0;
  for (std::string_view item : *items) {
    absl::StatusOr<std::vector<Piece>> pieces = ParseItem(item, hostlist);
    if (!pieces.ok()) return pieces.status();
    if (LongestName(*pieces) > kMaxNameLength) {
      return Invalid(hostlist, absl::StrCat("node names longer than ", kMaxNameLength, " characters"));
    }
    total += CountNames(*pieces, max_names);
    if (total > max_names) {
      return Invalid(hostlist, absl::StrCat("expands to more than ", max_names, " names"));
    }
    parsed.push_back(*std::move(pieces));
  }
  std::vector<std::string> names;
  names.reserve(total);
  for (const std::vector<Piece>& pieces : parsed) Expand(pieces, &names);
  return names;
}

std::string CompressHostlist(const std::vector<std::string>& names) {
  // Groups keyed by (prefix, suffix), in order of first appearance; each holds its digit strings in order.
  struct Group {
    std::string prefix;
    std::string suffix;
    std::vector<std::string> digits;
  };
  std::vector<Group> groups;
  absl::flat_hash_map<std::tuple<std::string, std::string, bool>, size_t> index;
  absl::flat_hash_set<std::string_view> seen;
  for (const std::string& name : names) {
    if (name.empty() || !seen.insert(name).second) continue;
    SplitName split = SplitAtLastNumber(name);
    // A name without a number (or with one too long for brackets) is its own group: a literal.
    if (split.digits.size() > kMaxDigits) split = SplitName{name, {}, {}};
    auto key = std::make_tuple(std::string(split.prefix), std::string(split.suffix), split.digits.empty());
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted) groups.push_back(Group{std::get<0>(key), std::get<1>(key), {}});
    groups[it->second].digits.emplace_back(split.digits);
  }

  std::string out;
  for (const Group& g : groups) {
    if (!out.empty()) out += ',';
    if (g.digits.size() == 1) {
      absl::StrAppend(&out, g.prefix, g.digits[0], g.suffix);
      continue;
    }
    // A run continues while the next number is one more and is spelled with the run's padding.
    std::string ranges;
    size_t i = 0;
    while (i < g.digits.size()) {
      const std::string& lo = g.digits[i];
      uint64_t value = 0;
      std::from_chars(lo.data(), lo.data() + lo.size(), value);
      size_t j = i + 1;
      while (j < g.digits.size() && Padded(value + 1, lo.size()) == g.digits[j]) {
        ++value;
        ++j;
      }
      if (!ranges.empty()) ranges += ',';
      ranges += lo;
      if (j - i > 1) absl::StrAppend(&ranges, "-", g.digits[j - 1]);
      i = j;
    }
    absl::StrAppend(&out, g.prefix, "[", ranges, "]", g.suffix);
  }
  return out;
}

}  // namespace rackwise
