// The shard spec (sim/common/shard.hpp): parsing, and the partition property the merge relies on
// (disjoint, covering, sizes within one), checked exhaustively over small totals and counts.
#include <catch2/catch.hpp>

#include "sim/common/shard.hpp"

using namespace exmy;

TEST_CASE("--shard i/N parses valid specs and names bad ones", "[shard]") {
  CHECK(parse_shard("0/1").whole());
  const Shard s = parse_shard("3/8");
  CHECK(s.index == 3);
  CHECK(s.count == 8);
  CHECK(s.text() == "3/8");
  for (const char* bad :
       {"3/2", "2/2", "0/0", "1", "/4", "1/", "-1/4", "1/4x", " 1/4", "1/1048577", "a/b", "1//4"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_shard(bad), InputError);
    try {
      parse_shard(bad, "--shard");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("--shard") == 0);
    }
  }
}

TEST_CASE("shards partition [0, total) disjointly, completely, evenly", "[shard]") {
  for (std::uint64_t total : {0ull, 1ull, 2ull, 7ull, 64ull, 1000ull, 4294967296ull}) {
    for (std::uint64_t n = 1; n <= 17; ++n) {
      std::uint64_t next = 0, lo = ~0ull, hi = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        const Shard s{i, n};
        REQUIRE(s.begin(total) == next);
        const std::uint64_t size = s.end(total) - s.begin(total);
        lo = std::min(lo, size);
        hi = std::max(hi, size);
        next = s.end(total);
      }
      CHECK(next == total);
      CHECK(hi - lo <= 1);
    }
  }
}
