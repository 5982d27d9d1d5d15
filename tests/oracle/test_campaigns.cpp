// Engine agreement, exhaustive where the input space allows (docs/SEMANTICS.md 2.2, 13):
//   (a) every code of every format with <= 16 bits (full sweep);
//   (b) all 2^16 bf16 and fp16 inputs x every <= 8-bit preset x Depth::ci rounding cases (every
//       deterministic mode x every overflow policy; sr:1/3/8/32 with a Philox and an all-ones
//       word; sr:8 under satfinite/sat). `exmy verify` runs Depth::full (all words of sr:1..3,
//       nine R values, four words each);
//   (c) boundary x pattern fp32/fp64 samples at Depth::ci;
//   (d) fp32 top halves x low half 0x0001 in the deterministic modes (Depth::ci).
// Measured on 2 busy cores: (a) ~14 core-seconds, (b) ~9, (c) ~3.
#include <catch2/catch.hpp>

#include "sim/common/error.hpp"
#include "sim/native/float_format.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/quant_oracle_spec.hpp"
#include "sim/verify/summary.hpp"

using namespace exmy;

namespace {
verify::Options test_options(verify::Depth depth) {
  verify::Options o;
  o.depth = depth;
  o.progress = false;
  o.max_reported = 10;
  return o;
}

void require_clean(const verify::Result& r, std::uint64_t min_checks) {
  for (const auto& m : r.first) UNSCOPED_INFO(verify::describe(m));
  CHECK_FALSE(r.interrupted);
  CHECK(r.checks >= min_checks);
  CHECK(r.mismatches == 0);
}
}  // namespace

TEST_CASE("campaign (a): every code of every <= 16-bit format decodes identically",
          "[oracle][campaign]") {
  const auto r = verify::run_decode(test_options(verify::Depth::full));
  // bf16 and fp16 alone contribute 2 * 2^16 codes with 5 checks each.
  require_clean(r, 5 * 2 * 65536);
  CHECK(r.configurations == verify::sweep_formats_16bit().size());
  CHECK(r.by_input_class[static_cast<int>(ValueClass::subnormal)] > 0);
  CHECK(r.by_input_class[static_cast<int>(ValueClass::nan)] > 0);
}

TEST_CASE("campaign (b): all bf16 inputs into every <= 8-bit preset", "[oracle][campaign]") {
  const auto r = verify::run_exhaustive16(formats::bf16, "bf16", test_options(verify::Depth::ci));
  require_clean(r, 11 * 28 * 65536);  // 11 presets x 28 ci rounding cases x 2^16 inputs
}

TEST_CASE("campaign (b): all fp16 inputs into every <= 8-bit preset", "[oracle][campaign]") {
  const auto r = verify::run_exhaustive16(formats::fp16, "fp16", test_options(verify::Depth::ci));
  require_clean(r, 11 * 28 * 65536);
}

TEST_CASE("campaign (c): fp32 and fp64 boundary samples into every narrower preset",
          "[oracle][campaign]") {
  const auto r = verify::run_sample(test_options(verify::Depth::ci));
  require_clean(r, 1000000);
  CHECK(r.by_input_class[static_cast<int>(ValueClass::inf)] > 0);
  CHECK(r.by_outcome[static_cast<int>(verify::Outcome::overflow)] > 0);
  CHECK(r.by_outcome[static_cast<int>(verify::Outcome::underflow)] > 0);
}

TEST_CASE("campaign (d): fp32 top halves with a sticky low half, deterministic modes",
          "[oracle][campaign]") {
  const auto r = verify::run_fp32_top16(test_options(verify::Depth::ci));
  require_clean(r, 11 * 18 * 65536);  // one convert check per input, plus the table checks
  CHECK(r.configurations == 11 * 18);
}

TEST_CASE("unknown campaign names are an input error", "[oracle][campaign]") {
  CHECK_THROWS_AS(verify::run_campaigns("fp8", test_options(verify::Depth::ci)), InputError);
}

TEST_CASE("summaries report mismatches and interruption", "[oracle][campaign]") {
  verify::Result r;
  r.name = "bf16";
  r.checks = 10;
  r.mismatches = 1;
  r.first.push_back(
      {"convert", "bf16", "e4m3fn", "rne", 0x3f80, 0, {0x38, 0}, {0x39, 1}, "why \"x\""});
  const std::string text = verify::summary_text({r});
  CHECK(text.find("MISMATCH convert bf16 -> e4m3fn [rne] input 0x3f80") != std::string::npos);
  CHECK(text.find("FAIL: 10 checks, 1 mismatches") != std::string::npos);
  const std::string json = verify::summary_json({r});
  CHECK(json.find("\"ok\": false") != std::string::npos);
  CHECK(json.find("\"native\": {\"code\": \"0x38\", \"flags\": 0}") != std::string::npos);
  CHECK(json.find("\"detail\": \"why \\\"x\\\"\"") != std::string::npos);
  r.mismatches = 0;
  r.first.clear();
  r.interrupted = true;
  CHECK(verify::summary_text({r}).find("(interrupted)") != std::string::npos);
  CHECK(verify::summary_json({r}).find("\"ok\": false") != std::string::npos);
}

TEST_CASE("campaign (e): optimizer steps, native engine against the step oracle",
          "[oracle][campaign][steps]") {
  // A few ops here (the whole ci depth is the ctest verify_steps_ci): torch AdamW on bf16, the
  // 8-bit requantization on every midpoint, a split format with :sr.
  for (const char* op : {"adamw-bf16", "bnb8-requantize", "adamw-fp16+8:sr", "stableadamw"}) {
    verify::Options o = test_options(verify::Depth::ci);
    o.op = op;
    const auto rs = verify::run_steps(o);
    REQUIRE(rs.size() == 1);
    INFO(op);
    require_clean(rs[0], 10000);
    CHECK(rs[0].by_label.size() >= 1);
  }
  verify::Options bad = test_options(verify::Depth::ci);
  bad.op = "adamw-fp8";
  CHECK_THROWS_AS(verify::run_steps(bad), InputError);
  CHECK(verify::step_op_names().size() >= 30);
}

TEST_CASE("campaign (e): quantization and matmul ops against the quantization oracle",
          "[oracle][campaign][steps][quant]") {
  // One op of each family, given as one --op list; every input class is counted.
  verify::Options o = test_options(verify::Depth::ci);
  o.op = "quant-e4m3fn-te,quant-linear,quant-mx-e2m1fn-torchao,quant-nvfp4-te,matmul-int8";
  const auto rs = verify::run_steps(o);
  REQUIRE(rs.size() == 5);
  for (const auto& r : rs) {
    INFO(r.name);
    require_clean(r, 1000);
    CHECK(r.by_label.size() == 9);
  }
  verify::Options bad = test_options(verify::Depth::ci);
  bad.op = "quant-int8,quant-int4";
  CHECK_THROWS_AS(verify::run_steps(bad), InputError);
}

TEST_CASE("regression: the oracle spec owns its format and codebook (dangling pointer)",
          "[oracle][quant][regression]") {
  // Found by bench_oracle_ratio: a spec built from a temporary quant::Options pointed into it.
  const auto make = [](const char* target) {
    quant::Options o;
    o.scheme = quant::parse_scheme("mx");
    o.target = quant::parse_target(target);
    return verify::oracle_quant_spec(o, 1, 32);
  };
  const verify::OracleQuant q = make("e5m2");
  std::vector<quant::Options> churn(64);  // reuse the freed stack and heap
  REQUIRE(q.spec.format != nullptr);
  CHECK(*q.spec.format == formats::e5m2);
  const verify::OracleQuant copy = q;
  CHECK(copy.spec.format == q.spec.format);
}

TEST_CASE("campaign shards add up to the whole run (--shard i/N, exmy verify merge)",
          "[oracle][campaign][shard]") {
  verify::Options whole = test_options(verify::Depth::ci);
  whole.op = "quant-int8,adamw-fp32,momentum8bit-small";
  const auto w = verify::run_campaigns("steps", whole);
  std::vector<std::vector<verify::Result>> parts;
  for (std::uint64_t i = 0; i < 3; ++i) {
    verify::Options o = whole;
    o.shard = Shard{i, 3};
    // Through the JSON a shard writes and the merge reads, as `exmy verify merge` does.
    Shard read;
    parts.push_back(verify::results_from_json(
        verify::summary_json(verify::run_campaigns("steps", o), o.shard), "shard", read));
    CHECK(read.index == i);
    CHECK(read.count == 3);
  }
  const auto m = verify::merge_results(parts);
  REQUIRE(m.size() == w.size());
  for (std::size_t k = 0; k < w.size(); ++k) {
    INFO(w[k].name);
    CHECK(m[k].name == w[k].name);
    CHECK(m[k].checks == w[k].checks);
    CHECK(m[k].by_input_class == w[k].by_input_class);
    CHECK(m[k].by_label.size() == w[k].by_label.size());
  }
}
