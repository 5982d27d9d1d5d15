// The one shard spec for long campaigns (`--shard i/N`): shard i of N, 0 <= i < N, takes a
// contiguous, deterministic slice of the work items [0, total). Slices of 0..N-1 are disjoint,
// cover every item, and differ in size by at most one (the first total % N shards get one more),
// so a merge of the N results counts every item exactly once. docs/SEMANTICS.md 13.4.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy {

struct Shard {
  std::uint64_t index = 0;  // i
  std::uint64_t count = 1;  // N; {0, 1} is the whole run

  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }

  // [begin, end) of this shard's slice of `total` items.
  std::uint64_t begin(std::uint64_t total) const { return offset(total, index); }
  std::uint64_t end(std::uint64_t total) const { return offset(total, index + 1); }

 private:
  std::uint64_t offset(std::uint64_t total, std::uint64_t k) const {
    const std::uint64_t q = total / count, r = total % count;
    return k * q + (k < r ? k : r);
  }
};

// Parses "i/N" (decimal, 1 <= N <= 2^20, i < N). `what` names the option for the error line.
inline Shard parse_shard(std::string_view text, std::string_view what = "--shard") {
  const std::size_t slash = text.find('/');
  const std::string expected = "i/N with 0 <= i < N and 1 <= N <= 1048576 (e.g. 0/4)";
  if (slash == std::string_view::npos)
    throw InputError(std::string(what) + " '" + std::string(text) + "': expected " + expected);
  Shard s;
  try {
    s.index = number::parse_u64(text.substr(0, slash), what, std::uint64_t{1} << 20, false);
    s.count = number::parse_u64(text.substr(slash + 1), what, std::uint64_t{1} << 20, false);
  } catch (const InputError&) {
    throw InputError(std::string(what) + " '" + std::string(text) + "': expected " + expected);
  }
  if (s.count == 0 || s.index >= s.count)
    throw InputError(std::string(what) + " '" + std::string(text) + "': expected " + expected);
  return s;
}

}  // namespace exmy
