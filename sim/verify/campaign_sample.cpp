// Campaign (c): boundary x pattern samples of fp32 and fp64 inputs into every narrower preset in
// every rounding case; fp32 inputs also check the host fast path's tables (sim/fast).
#include <chrono>

#include "sim/fast/fp32_cast_table.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"
#include "sim/verify/sample_inputs.hpp"

namespace exmy::verify {

Result run_sample(const Options& o) {
  using namespace detail;
  const auto t0 = std::chrono::steady_clock::now();
  Result res;
  res.name = "fp32-sample";
  const auto cases = rounding_cases(o.depth);

  struct Pair {
    NamedFloatFormat from, to;
    std::vector<std::uint64_t> inputs;
  };
  std::vector<Pair> pairs;
  for (const NamedFloatFormat in :
       {NamedFloatFormat{"fp32", formats::fp32}, NamedFloatFormat{"fp64", formats::fp64}}) {
    for (const auto& t : float_presets()) {
      if (t.format.total_bits() >= in.format.total_bits()) continue;
      pairs.push_back({in, t, boundary_inputs(in.format, t.format, o.depth)});
    }
  }
  constexpr std::size_t kChunk = 8192;
  struct Job {
    std::size_t pair, rcase, begin, end;
  };
  std::vector<Job> jobs;
  std::uint64_t total = 0;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const std::size_t n = pairs[p].inputs.size();
    for (std::size_t c = 0; c < cases.size(); ++c) {
      for (std::size_t b = 0; b < n; b += kChunk)
        jobs.push_back({p, c, b, std::min(n, b + kChunk)});
    }
    total += n * cases.size();
  }
  res.configurations = pairs.size() * cases.size();
  Progress progress(res.name, total, o.progress);

  run_jobs(jobs.size(), o, res, [&](std::size_t j, Tally& t) {
    const Job& job = jobs[j];
    const Pair& p = pairs[job.pair];
    const RoundingCase& rc = cases[job.rcase];
    const FloatFormat& from = p.from.format;
    const FloatFormat& to = p.to.format;
    const bool table = from == formats::fp32 && fast::Fp32CastTable::eligible(to, rc.r);
    const fast::Fp32CastTable* tab = table ? &fast::Fp32CastTable::cached(to, rc.r) : nullptr;
    for (std::size_t i = job.begin; i < job.end; ++i) {
      const std::uint64_t code = p.inputs[i];
      const std::uint32_t w = word_for(rc, code);
      const ValueClass cls = oracle::classify(from, code);
      const Encoded expect = oracle::encode_code(from, code, to, rc.r, w);
      const Encoded got = native::convert(from, to, rc.r, code, w);
      if (!t.add(cls, expect, got)) {
        t.keep({"convert", p.from.name, p.to.name, rc.label, code, w, got, expect, ""},
               o.max_reported);
      }
      if (tab != nullptr) {
        // The table yields codes only; its flags are not part of its contract.
        const Encoded fast_got{(*tab)(static_cast<std::uint32_t>(code)), expect.flags};
        if (!t.add(cls, expect, fast_got)) {
          t.keep({"fast-table", p.from.name, p.to.name, rc.label, code, w, fast_got, expect, ""},
                 o.max_reported);
        }
      }
    }
    progress.add(job.end - job.begin);
  });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish(res);
  return res;
}

}  // namespace exmy::verify
