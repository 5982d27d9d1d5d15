// Campaign (b): every 16-bit input code (bf16 or fp16) into every <= 8-bit preset, in every
// rounding case and overflow policy: native::convert against oracle::encode_code.
#include <chrono>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"

namespace exmy::verify {

Result run_exhaustive16(const FloatFormat& input, const std::string& name, const Options& o) {
  using namespace detail;
  const auto t0 = std::chrono::steady_clock::now();
  Result res;
  res.name = name;
  const auto targets = narrow_float_presets();
  const auto cases = rounding_cases(o.depth);
  const std::uint64_t codes = std::uint64_t{1} << input.total_bits();
  constexpr std::uint64_t kChunk = 4096;
  const std::uint64_t chunks = (codes + kChunk - 1) / kChunk;
  const std::size_t configs = targets.size() * cases.size();
  res.configurations = configs;
  const std::string from_name = float_format_name(input);
  Progress progress(name, configs * codes, o.progress);

  run_jobs(configs * chunks, o, res, [&](std::size_t job, Tally& t) {
    const std::size_t config = job / chunks;
    const auto& target = targets[config / cases.size()];
    const RoundingCase& rc = cases[config % cases.size()];
    const std::uint64_t begin = (job % chunks) * kChunk;
    const std::uint64_t end = std::min(codes, begin + kChunk);
    for (std::uint64_t code = begin; code < end; ++code) {
      const std::uint32_t w = word_for(rc, code);
      const Encoded expect = oracle::encode_code(input, code, target.format, rc.r, w);
      const Encoded got = native::convert(input, target.format, rc.r, code, w);
      if (!t.add(oracle::classify(input, code), expect, got)) {
        t.keep({"convert", from_name, target.name, rc.label, code, w, got, expect, ""},
               o.max_reported);
      }
    }
    progress.add(end - begin);
  });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish(res);
  return res;
}

}  // namespace exmy::verify
