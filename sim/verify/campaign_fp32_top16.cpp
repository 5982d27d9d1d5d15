// Campaign (d) "fp32-top16": fp32 inputs into every <= 8-bit preset in the deterministic modes,
// for every one of the 2^16 top halves combined with nonzero low halves.
//
// Why this covers all 2^32 fp32 inputs (deterministic modes, targets with M <= 6): every kept
// bit of the target and the bit just below it (the round bit) lie in the top 16 bits of an fp32
// input (sign, exponent, 7 mantissa bits), for normal and subnormal inputs alike (quantum >=
// 2^(exp - 6)); the low 16 bits only enter through "is anything below nonzero". So under
// section 2 the result is a function of (top16, low16 != 0). campaign (b) bf16 checks low16 = 0
// (bf16 codes are exactly the fp32 codes with low16 = 0); this campaign checks low16 != 0 with
// the representatives 0x0001, 0x8000 and 0xFFFF (one at Depth::ci). With the fast path's own
// proof (table == native for all 2^32 inputs, tests/native), both engines and the table agree on
// every fp32 input.
#include <chrono>

#include "sim/fast/fp32_cast_table.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"

namespace exmy::verify {

Result run_fp32_top16(const Options& o) {
  using namespace detail;
  const auto t0 = std::chrono::steady_clock::now();
  Result res;
  res.name = "fp32-top16";
  const auto targets = narrow_float_presets();
  std::vector<RoundingCase> cases;
  for (const auto& c : rounding_cases(o.depth)) {
    if (c.r.mode != RoundMode::sr) cases.push_back(c);
  }
  const std::vector<std::uint32_t> lows = o.depth == Depth::full
                                              ? std::vector<std::uint32_t>{0x0001, 0x8000, 0xFFFF}
                                              : std::vector<std::uint32_t>{0x0001};
  constexpr std::uint32_t kChunk = 4096;
  constexpr std::uint32_t kChunks = 65536 / kChunk;
  const std::size_t configs = targets.size() * cases.size();
  res.configurations = configs;
  Progress progress(res.name, configs * 65536 * lows.size(), o.progress);

  run_jobs(configs * kChunks, o, res, [&](std::size_t job, Tally& t) {
    const std::size_t config = job / kChunks;
    const auto& target = targets[config / cases.size()];
    const RoundingCase& rc = cases[config % cases.size()];
    const fast::Fp32CastTable* tab = fast::Fp32CastTable::eligible(target.format, rc.r)
                                         ? &fast::Fp32CastTable::cached(target.format, rc.r)
                                         : nullptr;
    // The 32-bit fast cast of the GPU kernels and the host sr path (sim/native/fast_cast.hpp),
    // in its mode-fixed form where it has one, against the oracle directly.
    const bool has_fast = native::fast_cast_supported(target.format);
    const native::FastCastPlan plan =
        has_fast ? native::make_fast_cast_plan(target.format, rc.r) : native::FastCastPlan{};
    const std::uint32_t begin = static_cast<std::uint32_t>(job % kChunks) * kChunk;
    for (std::uint32_t top = begin; top < begin + kChunk; ++top) {
      for (const std::uint32_t low : lows) {
        const std::uint32_t code = (top << 16) | low;
        const ValueClass cls = oracle::classify(formats::fp32, code);
        const Encoded expect = oracle::encode_code(formats::fp32, code, target.format, rc.r);
        const Encoded got = native::convert(formats::fp32, target.format, rc.r, code);
        if (!t.add(cls, expect, got)) {
          t.keep({"convert", "fp32", target.name, rc.label, code, 0, got, expect, ""},
                 o.max_reported);
        }
        if (has_fast) {
          const Encoded fast_got{native::fast_cast_fp32_dispatch(plan, rc.r, code, 0),
                                 expect.flags};
          if (!t.add(cls, expect, fast_got)) {
            t.keep({"fast-cast", "fp32", target.name, rc.label, code, 0, fast_got, expect, ""},
                   o.max_reported);
          }
        }
        if (tab != nullptr) {
          const Encoded fast_got{(*tab)(code), expect.flags};
          if (!t.add(cls, expect, fast_got)) {
            t.keep({"fast-table", "fp32", target.name, rc.label, code, 0, fast_got, expect, ""},
                   o.max_reported);
          }
        }
      }
    }
    progress.add(kChunk * lows.size());
  });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish(res);
  return res;
}

}  // namespace exmy::verify
