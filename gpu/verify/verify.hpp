// Device verification: the exhaustive cast campaign. Every fp32 input (or a slice of them) is
// cast on the GPU and compared bit for bit with the CPU native engine (computed on the host's
// cores, chunk by chunk, while the GPU prepares the next chunk). Backends:
//   "cast"  gpu/cast/cast.hpp (fast or generic path), against native::convert in the same rounding;
//   "hw"    PTX cvt.rn.satfinite (gpu/cast/hw_cast.hpp), against native::convert under rne with
//           Overflow::satfinite; differences are the hardware's and are reported as findings.
// Entry point for `exmy verify --device cuda` (cli/cmd_verify_gpu.cpp). Needs EXMY_HAVE_CUDA.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cast/cast.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::gpu {

struct CampaignMismatch {
  std::uint32_t input = 0;  // fp32 code (or fp16 / fp8 code for the small hw cases)
  std::uint32_t gpu = 0;
  std::uint32_t cpu = 0;
};

struct CampaignCase {
  std::string backend;   // "cast", "cast-generic", "hw-f32", "hw-f16", "hw-decode"
  std::string format;    // target format name
  std::string rounding;  // "rne", "rtz", "sr:8", "rne+satfinite", ...
  std::uint64_t inputs = 0;
  std::uint64_t mismatches = 0;
  // Indexed by the input's ValueClass (zero, subnormal, normal, inf, nan).
  std::array<std::uint64_t, 5> class_inputs{};
  std::array<std::uint64_t, 5> class_mismatches{};
  std::vector<CampaignMismatch> examples;  // the first few, in input order
  double seconds = 0;
};

struct CampaignOptions {
  std::vector<FloatFormat> formats;  // empty: every <= 8-bit preset
  std::vector<Rounding> roundings;   // empty: rne, rtz, sr:8
  std::uint64_t seed = 20261121;     // Philox key for sr (stream 0, index = input code)
  std::uint64_t first = 0;           // fp32 inputs [first, first + count)
  std::uint64_t count = std::uint64_t{1} << 32;
  // Designed inputs instead of a range (`--depth ci`): each case runs the inputs of `exmy verify
  // --backend --depth ci` for its format and rounding (sim/verify/backend_inputs.hpp, SEMANTICS
  // 13.5.1: boundary x pattern tables, sr words placed at their edges) plus `designed_random`
  // weighted random inputs; element i of a call is cast at Philox index i with the call's seed.
  // shard_index / shard_count slice every call (--shard, --gpus).
  bool designed = false;
  // Where the reference codes of a range are computed. cpu: native::convert on the host's cores
  // (the GPU's codes copied back). device: native::convert compiled for the GPU, in a compare
  // kernel beside the checked kernel's output (no copy, no CPU: ~10x the rate); each such case is
  // followed by a "cast-reference" row, the GPU's native::convert (CastPath::generic) against the
  // CPU's on the case's designed inputs, so a device compiler that disagreed with the host fails
  // the run. Ignored under `designed` (always cpu).
  bool device_reference = false;
  std::uint64_t designed_random = std::uint64_t{1} << 24;
  std::uint64_t shard_index = 0, shard_count = 1;
  CastPath path = CastPath::automatic;
  bool software = true;  // the "cast" backend
  bool hardware = true;  // the "hw" backend, where the device has it
  int cpu_threads = 0;   // 0: all cores
  bool progress = true;  // one line per case on stderr
  std::size_t max_examples = 8;
};

std::vector<CampaignCase> run_cast_campaign(const CampaignOptions& options);

// The device reference's comparator on its own: fp32 codes [first, first + count) (first a
// multiple of 4) cast on the GPU into f under `checked`, compared on the GPU with
// native::convert under `reference`. With checked != reference its mismatches are the inputs
// where the two roundings differ (a test that the comparator can fail: tests/gpu).
CampaignCase device_reference_probe(const FloatFormat& f, const Rounding& checked,
                                    const Rounding& reference, std::uint64_t first,
                                    std::uint64_t count, std::uint64_t seed);

// A markdown table of the cases (one row each, per-class mismatch counts) plus the examples.
std::string campaign_markdown(const std::vector<CampaignCase>& cases);

// Mismatches between gpu/quant/fast_int8.hpp and native::round_to_int8 (run on the device) over all
// 2^32 fp32 inputs y, for one of rne, rtz, rup, rdn.
std::uint64_t verify_int8_rounding_exhaustive(RoundMode mode);

}  // namespace exmy::gpu
