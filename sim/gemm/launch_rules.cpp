#include "sim/gemm/launch_rules.hpp"

#include <cstring>

namespace exmy::gemm {

std::size_t split_part(std::size_t K, std::size_t S, std::size_t g) {
  const std::size_t per = (K + S - 1) / S;
  return g * ((per + g - 1) / g);
}

namespace {

// One rule: the kernels of `family` for these input and output types run `base`; a launch
// followed by splitKreduce runs S parts of P = split_part(K, S, unit) consecutive k, each
// accumulated from +0 and added in part order in fp32 (`chunk=P`), with `,rp` where the
// reduction reads 16-bit partials (its first template type; torch's default
// allow_{bf16,fp16}_reduced_precision_reduction). The trees behind the part sizes: FPRev on the
// H100 (bench/results/2026-11-28-h100-gemm-launch.md).
struct FamilyRule {
  const char* family;
  const char* in;   // input type
  const char* out;  // output type
  const char* base;
  std::size_t unit;
  bool verified;
  // Why it is (or is not) verified: the evidence, for messages.
  const char* evidence;
  // ktile=T with T the k tile of the kernel's name (CUTLASS "<M>x<N>_<T>x<stages>"): the
  // mainloop runs the residue tile first (kernel_ktile below).
  bool ktile_from_key = false;
  // The rule holds only for kernels whose name starts so (nullptr: every kernel of the family).
  const char* key_prefix = nullptr;
};

// SIMT SGEMM (cutlass_80_simt_sgemm_*): CUDA-core FMA chains, also for TF32 requests (the CUDA
// cores read the fp32 values unrounded); 16-bit s1688gemm (cutlass_75_tensorop_*s1688gemm_*):
// mma.sync m16n8k8, MMA-Sim's Hopper parameters k = 8, 25 fraction bits. Verified: bit-exact on
// every captured shape of the family in the 2026-11-27 random-shape captures (H100, cuBLAS
// 130100), each output with its own launch record (bench/results/2026-11-28-h100-gemm-launch.md,
// addendum); the others name what was measured.
constexpr FamilyRule kRules[] = {
    {"simt_sgemm", "fp32", "fp32", "fp32-seq", 4, true,
     "bit-exact on all 507 captured fp32 shapes of the family"},
    {"simt_sgemm", "tf32", "fp32", "fp32-seq", 4, true,
     "bit-exact on all 39 captured TF32 shapes of the family"},
    {"s1688gemm", "bf16", "bf16", "hw:k=8,frac=25", 8, true,
     "bit-exact on all 455 captured bf16 shapes of the family"},
    {"s1688gemm", "fp16", "fp16", "hw:k=8,frac=25", 8, false,
     "bit-exact on 51 of 52 captured fp16 shapes; 121x445x1420 differs in 1 output"},
    {"s1688gemm", "bf16", "fp32", "hw:k=8,frac=25", 8, false,
     "the fp32 output of this family differs on 113 of 455 captured bf16 shapes (1 to 2,859 "
     "outputs, 1 to 64 ulp: the k = 8 unit's arithmetic is not modelled)"},
    {"s1688gemm", "fp16", "fp32", "hw:k=8,frac=25", 8, false,
     "the fp32 output of this family differs on 8 of 52 captured fp16 shapes (bf16: 113 of "
     "455)"},
    // TF32 (issue 30, 2026-12-01): sm80 xmma TF32 kernels (sm80_xmma_gemm_*tf32*, mma.sync
    // m16n8k8, never split on the H100 or H200: S = 1, no reduction) and CUTLASS TF32 s1688gemm
    // (cutlass_80_tensorop_s1688gemm_*), whose mainloop runs the k-tile residue of each split
    // part first (FPRev trees, bench/results/2026-12-01-h200-gemm-campaign.md).
    {"xmma_tf32", "tf32", "fp32", "hw:k=8,frac=25,tf32=rne", 4, true,
     "bit-exact on all 426 captured H100 and all 160 captured H200 TF32 shapes of the sm80 "
     "kernel",
     false, "sm80_xmma_gemm_"},
    {"s1688gemm_tf32", "tf32", "fp32", "hw:k=8,frac=25,tf32=rne", 4, false,
     "the FPRev trees of 32 shapes on the H100 and the H200 and all 8 captured H200 shapes "
     "with a record agree; the H100 captures' outputs are not yet checked with it",
     true},
};

// The k tile T of a CUTLASS kernel name ("..._64x64_16x6_tn_align1" -> 16), 0 if none.
std::size_t kernel_ktile(const std::string& key) {
  // The first "_<digits>x<digits>_<digits>x<digits>_" group: tile M x N, then k tile x stages.
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '_') continue;
    std::size_t j = i + 1;
    std::size_t nums[4] = {0, 0, 0, 0};
    bool ok = true;
    for (int n = 0; n < 4 && ok; ++n) {
      const std::size_t start = j;
      std::size_t v = 0;
      while (j < key.size() && key[j] >= '0' && key[j] <= '9') v = v * 10 + (key[j++] - '0');
      const char want = n == 0 || n == 2 ? 'x' : '_';
      ok = j > start && j < key.size() && key[j] == want;
      nums[n] = v;
      ++j;
    }
    if (ok) return nums[2];
  }
  return 0;
}

std::string record_name(const LaunchRecord& r) {
  return launch_record_name(r);
}

}  // namespace

std::string launch_record_name(const LaunchRecord& r) {
  return "launch record " + r.family + " (" + r.key + ") split " + std::to_string(r.split) +
         (r.reduce.empty() ? "" : " + " + r.reduce);
}

LaunchRule launch_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                       std::size_t K) {
  LaunchRule lr;
  const FamilyRule* rule = nullptr;
  for (const FamilyRule& f : kRules) {
    if (r.family == f.family && in == f.in && out == f.out &&
        (f.key_prefix == nullptr || r.key.rfind(f.key_prefix, 0) == 0)) {
      rule = &f;
    }
  }
  if (rule == nullptr) {
    lr.why =
        record_name(r) + ": exmy has no rule for this family with " + in + " in, " + out + " out";
    return lr;
  }
  const bool split_reduce = r.reduce.rfind("splitKreduce/", 0) == 0;
  if (r.split > 1 && !split_reduce) {
    lr.why = record_name(r) + ": a split without splitKreduce is not a case the family rule covers";
    return lr;
  }
  if (!r.reduce.empty() && !split_reduce) {
    lr.why = record_name(r) +
             ": a reduction other than splitKreduce is not a case the family "
             "rule covers";
    return lr;
  }
  // With splitKreduce (also after S = 1: cuBLAS then reduces one part) the parts are chunks
  // added from +0 in fp32; without it, one accumulation.
  std::string model = rule->base;
  if (split_reduce) {
    const std::size_t P = split_part(K, r.split, rule->unit);
    const bool seq = std::strncmp(rule->base, "fp32-seq", 8) == 0;
    model += (seq ? ":chunk=" : ",chunk=") + std::to_string(P);
    const bool partial16 = r.reduce == "splitKreduce/bf16" || r.reduce == "splitKreduce/fp16";
    if (partial16) {
      if (seq) {
        lr.why = record_name(r) +
                 ": 16-bit partials after a CUDA-core kernel are not a case "
                 "the family rule covers";
        return lr;
      }
      model += ",rp";
    }
  }
  if (rule->ktile_from_key) {
    const std::size_t T = kernel_ktile(r.key);
    if (T == 0) {
      lr.why = record_name(r) + ": the kernel's name holds no k tile (<M>x<N>_<T>x<stages>)";
      return lr;
    }
    model += ",ktile=" + std::to_string(T);
  }
  lr.model = model;
  lr.status = rule->verified ? LaunchRule::Status::verified : LaunchRule::Status::unverified;
  lr.why = record_name(r) + " -> " + model +
           (rule->verified ? " (verified family: " : " (family rule not verified: ") +
           rule->evidence + ")";
  return lr;
}

}  // namespace exmy::gemm
