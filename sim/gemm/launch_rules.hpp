// Kernel family -> accumulation model (docs/SEMANTICS.md 15.6): given the kernel cuBLAS launched
// for a GEMM (its launch record: family, split count S = gridDim.z, the reduction that followed),
// the model of exmy's family (15.2) that reproduces it. One table (launch_rules.cpp); a rule is
// "verified" for an input and output type only where bench/results shows it bit-exact on every
// captured shape of that family.
#pragma once

#include <cstddef>
#include <string>

#include "sim/gemm/gemm_profile.hpp"

namespace exmy::gemm {

struct LaunchRule {
  enum class Status { verified, unverified, none };
  Status status = Status::none;
  std::string model;  // the model string (parse_accum_model); empty for none
  // One phrase for messages: "launch record simt_sgemm split 5 -> fp32-seq:chunk=88 (verified
  // family)", or what keeps it from being verified, or why no rule applies.
  std::string why;
};

// The rule for a GEMM of input type `in` ("bf16", "fp16", "tf32", "fp32"; "e4m3fn:PAIR" for
// cuBLASLt's blockwise-scaled FP8, SEMANTICS 15.7), output type `out` ("fp32", or the 16-bit
// input's type; bf16 for blockwise FP8 too) and depth K whose launch record is `r`.
LaunchRule launch_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                       std::size_t M, std::size_t N, std::size_t K);
// The same without M and N (0: unknown), for families whose rule does not need them (nvjet's
// split needs them: no rule applies to its records without them).
LaunchRule launch_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                       std::size_t K);

// "launch record FAMILY (KEY) split S[ + REDUCE]", for messages.
std::string launch_record_name(const LaunchRecord& r);

// The part size of split-K kernels whose parts are whole units of g k: P = g ceil(ceil(K/S)/g).
std::size_t split_part(std::size_t K, std::size_t S, std::size_t g);

}  // namespace exmy::gemm
