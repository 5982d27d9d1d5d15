// Verification campaigns: the native engine (and the host fast path) against the MPFR oracle.
// Each campaign is OpenMP-parallel, reports progress on stderr, stops early when request_stop()
// is called (the CLI wires SIGINT to it) and returns per-class counts and the first mismatches.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/shard.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::verify {

// full: everything `exmy verify` promises. ci: a deterministic subset (all deterministic modes
// and overflow policies, fewer stochastic words, fewer sampled inputs) sized for the test suite
// and `exmy selfcheck`.
enum class Depth { ci, full };

struct Options {
  int threads = 0;  // 0: OpenMP's default
  bool progress = true;
  std::size_t max_reported = 20;  // mismatches kept per campaign
  Depth depth = Depth::full;
  std::string op;  // steps campaign: run only this op ("" = every op)
  // Which slice of every campaign's job list this process runs (SEMANTICS 13.4): the N results
  // of a run add up to the whole run (`exmy verify merge`).
  Shard shard{};
};

// One disagreement, with everything needed to reproduce it.
struct Mismatch {
  std::string check;     // "convert", "fast-table", "decode", "identity", "descriptor", ...
  std::string from, to;  // format names
  std::string rounding;  // rounding label ("rne", "sr:8 satfinite")
  std::uint64_t input = 0;
  std::uint32_t rand = 0;
  Encoded native, oracle;
  std::string detail;  // for checks that are not a code/flags pair
};
std::string describe(const Mismatch& m);

// Outcome buckets of the oracle's result, one per check, highest priority first.
enum class Outcome : std::uint8_t { invalid, overflow, underflow, inexact, exact };
inline constexpr int kOutcomes = 5;
inline constexpr int kClasses = 5;  // ValueClass values
const char* outcome_name(Outcome o);

// Checks and mismatches under a named input class (the steps campaign's classes).
struct LabelCount {
  std::string label;
  std::uint64_t checks = 0, mismatches = 0;
};

struct Result {
  std::string name;
  std::uint64_t checks = 0;
  std::uint64_t mismatches = 0;
  std::array<std::uint64_t, kClasses> by_input_class{};  // checks per ValueClass of the input
  std::array<std::uint64_t, kOutcomes> by_outcome{};     // checks per Outcome
  std::vector<Mismatch> first;                           // the first max_reported mismatches
  std::vector<LabelCount> by_label;                      // per named input class (steps)
  // What by_label counts when it is not the steps campaign's input classes (whose by_input_class
  // then counts output values): "designed input class" for backend sweeps, whose by_input_class
  // stays the fp32 class of the input.
  std::string label_title;
  std::vector<std::string> notes;    // lines printed under the campaign
  std::uint64_t configurations = 0;  // (format, rounding) pairs swept
  bool interrupted = false;
  double seconds = 0;
};

// (a) Every code of every format with <= 16 bits (presets and a generic eXmY sweep with
// E + M <= 15, fn/fnuz/fnu variants and bias overrides): class, sign and exact value, identity
// conversion, conversion to fp32 and fp64, and the format's derived limits.
Result run_decode(const Options& o);
// The formats of campaign (a): the presets with <= 16 bits, then for every E in 1..11 and
// M <= 15 - E the variants ieee (E >= 2; with M = 0 it has inf but no NaN code), fn, fnuz and fnu,
// each with its default bias, bias 0 and bias 3 * default + 2 (values far below fp64's range).
std::vector<FloatFormat> sweep_formats_16bit();

// (b) All 2^16 codes of `input` (bf16 or fp16) into every <= 8-bit preset in every mode and
// overflow policy (sr:R with several R and words).
Result run_exhaustive16(const FloatFormat& input, const std::string& name, const Options& o);
// (c) Boundary x pattern samples of fp32 and fp64 inputs into every narrower preset.
Result run_sample(const Options& o);
// (d) fp32 inputs with every top half and nonzero low halves into every <= 8-bit preset in the
// deterministic modes: with (b) bf16, equivalent to all 2^32 fp32 inputs (campaign_fp32_top16.cpp).
Result run_fp32_top16(const Options& o);

// (e) Optimizer steps: the native engine (sim/optim on sim/native) against the step oracle
// (sim/oracle/steps), one Result per op (campaign_steps.cpp). `o.op` picks one op.
std::vector<Result> run_steps(const Options& o);
std::vector<std::string> step_op_names();

// The campaigns by name: decode, bf16, fp16, fp32-sample, fp32-top16, steps; "all" runs every
// one but steps (which `exmy verify --campaign steps` runs).
std::vector<std::string> campaign_names();
std::vector<Result> run_campaigns(const std::string& which, const Options& o);

// Rounding label used in reports: the mode ("rne", "sr:8") then the policy when not "none".
std::string rounding_label(const Rounding& r);

// Cooperative interruption: campaigns poll this flag between chunks of work.
void request_stop();
void clear_stop();
bool stop_requested();

}  // namespace exmy::verify
