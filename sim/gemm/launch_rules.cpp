#include "sim/gemm/launch_rules.hpp"

#include <cstring>
#include <utility>

#include "sim/common/error.hpp"
#include "sim/gemm/accum_model.hpp"

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
  // The kernel's k-tile, its residue first (`ktile=T`, SEMANTICS 15.2): 0 none; kFromName the
  // k-tile in the kernel's name (CUTLASS's _<M>x<N>_<T>x<stages>_); else that many k.
  int ktile = 0;
  // Where K is a multiple of this many k (0: never), the split parts are whole units of it
  // instead of `unit` (cuBLAS's wmma kernels: 64; bench/results/2026-12-01-h200-gemm-wmma.md).
  std::size_t aligned_unit = 0;
  // The rule holds only for kernels whose name starts so (nullptr: every kernel of the family).
  const char* key_prefix = nullptr;
  // Split parts of whole 32-k units (P = 32 ceil(ceil(K/S)/32)) where 32 divides K and
  // K >= 32 S (else `unit`): cuBLAS's TF32 s1688gemm
  // (bench/results/2026-12-02-h200-gemm-tc-heldout.md). The earlier clause, whole k-tiles where
  // the k-tile T divides K, differs from it only for T = 16 kernels; where 32 does not divide
  // K the `unit` parts held (31x32x848, 56x461x816 of the held-out captures), fitted on those
  // shapes: wherever the two clauses differ the rule is announced.
  bool tile_parts = false;
  // nvjet_sm90_* (cuBLAS's sm90 kernels): the split is carried in the grid's x y, and the
  // record's S is the CTA count (tools/gemm_launch.py); the split count is S / tiles, the tiles
  // of the name's _<a>x<b>_ (a along N, b along M) padded to its cluster _<cx>x<cy>_:
  // tiles = cx ceil(ceil(N/a)/cx) * cy ceil(ceil(M/b)/cy)
  // (bench/results/2026-12-01-h200-gemm-tc.md).
  bool grid_split = false;
  // Where K is a multiple of this many k (0: never) and the launch splits, the rule is not
  // verified (no row uses it since s16816gemm's 64-k parts were checked on a held-out capture).
  std::size_t unverified_aligned = 0;
  // sm90 xmma segment-k kernels (..._tilesize<a>x<b>x<T>_..._execute_segment_k_on_kernel...):
  // the record's S is the CTA count; segments = S / (ceil(M/a) ceil(N/b)), each a run of whole
  // k-tiles of T (the extra tiles in the last segments, the partial tile in the last), added as
  // a balanced tree in the kernel: `,split=segments,tile=T,tail,tree`.
  bool segment_k = false;
  // cuBLAS's sm80 xmma FFMA kernels (sm80_xmma_gemm_f32f32_f32f32_f32_*_tilesize<M>x<N>x<T>_*):
  // the k-tiles of T k go round-robin to the S = gridDim.z CTAs (tile t to CTA t mod S), each
  // an FMA chain over its tiles in k order from +0 (`fp32-seq:lanes=S,vec=T`); the S partials
  // are added in CTA order by the xmma split_k kernel that follows (`lanesum=seq`), or, with no
  // kernel following and S > 1, by the kernel's own fold (`lanesum=fold`). FPRev trees of 56
  // shapes on the H100 and the H200 (bench/results/2026-12-01-h200-gemm-simt.md).
  bool xmma_slices = false;
  // The aligned_unit parts rest on one launch (s1688gemm: bf16 64x17x4160 on the H200, 17 parts
  // of 256, not 248; bench/results/2026-12-02-h200-qlora-linear.md): where they differ from the
  // `unit` parts the rule is announced.
  bool aligned_once = false;
};

constexpr int kFromName = -1;

constexpr const char* kS16816Evidence =
    "FPRev trees of 29 shapes and every output of the 7 captured H200 shapes of the family; "
    "held-out capture seed 20261202: every output of its 178 shapes outside a split with 64 "
    "dividing K (bf16 94, 67,672 outputs; fp16 84, 61,558), 0 mismatching, and the 64-k parts "
    "fitted on its 96 with; held-out capture seed 20261203, the rule unchanged: every output of "
    "its 268 shapes (bf16 129, 95,206 outputs; fp16 139, 97,842; 97 splits with 64 dividing K), "
    "0 mismatching";
constexpr const char* kNvjetEvidence =
    "FPRev trees of 14 H200 shapes, every output of the 11 captured H200 shapes of the family, "
    "and the H100 profile's 17 verified nvjet shapes; held-out capture seed 20261202: FPRev "
    "trees of 48 shapes equal, every output of 192 shapes with a rule (bf16 102, 73,392 "
    "outputs; fp16 90, 60,200), 0 mismatching; seed 20261203: FPRev trees of 47 shapes equal, "
    "every output of 176 shapes (bf16 88, 60,648; fp16 88, 63,304), 0 mismatching (its 48th "
    "tree and 89th fp16 shape: the floor(K/S) launch announced)";

// SIMT SGEMM (cutlass_80_simt_sgemm_*): CUDA-core FMA chains, also for TF32 requests (the CUDA
// cores read the fp32 values unrounded); 16-bit s1688gemm (cutlass_75_tensorop_*s1688gemm_*):
// mma.sync m16n8k8, MMA-Sim's Hopper parameters k = 8, 25 fraction bits, k-tiles of 32 with the
// residue first; split parts of 8 ceil(ceil(K/S)/8) k, or 64 ceil(ceil(K/S)/64) where K is a
// multiple of 64 (as wmma and s16816gemm; one launch decides, announced where the two differ).
// Verified: bit-exact on every captured shape of the family in the 2026-11-27 random-shape captures
// (H100, cuBLAS 130100), each output with its own launch record
// (bench/results/2026-11-28-h100-gemm-launch.md, addendum), or on every output of every shape of
// the family in the H200's held-out capture of 2026-12-01 (same cuBLAS; split counts fitted
// where the shape has no record: bench/results/2026-12-01-h200-gemm-wmma.md).
constexpr FamilyRule kRules[] = {
    {"simt_sgemm", "fp32", "fp32", "fp32-seq", 4, true,
     "bit-exact on all 507 captured fp32 shapes of the family"},
    {"simt_sgemm", "tf32", "fp32", "fp32-seq", 4, true,
     "bit-exact on all 39 captured TF32 shapes of the family"},
    {"s1688gemm", "bf16", "bf16", "hw:k=8,frac=25", 8, true,
     "bit-exact on all 455 captured H100 bf16 shapes and all 169 of the H200 capture", 32, 64,
     nullptr, false, false, 0, false, false, true},
    {"s1688gemm", "fp16", "fp16", "hw:k=8,frac=25", 8, true,
     "bit-exact on all 15 fp16 shapes of the H200 capture; the H100's one miss (121x445x1420) "
     "is a shape where the k-tile's residue moves the groups",
     32, 64, nullptr, false, false, 0, false, false, true},
    {"s1688gemm", "bf16", "fp32", "hw:k=8,frac=25", 8, true,
     "bit-exact on all 169 bf16 shapes (941,191 outputs) of the H200 capture; the H100's 107 "
     "misses of 455 are all shapes where the k-tile's residue moves the groups",
     32, 64, nullptr, false, false, 0, false, false, true},
    {"s1688gemm", "fp16", "fp32", "hw:k=8,frac=25", 8, true,
     "bit-exact on all 15 fp16 shapes of the H200 capture; the H100's 8 misses of 52 are all "
     "shapes where the k-tile's residue moves the groups",
     32, 64, nullptr, false, false, 0, false, false, true},
    // wmma (cutlass_75/80_wmma_tensorop_*s161616gemm_*, wmma m16n16k16): MMA-Sim's Hopper
    // k = 16 unit, the kernel's k-tile (its name) with the residue first; split parts of
    // 8 ceil(ceil(K/S)/8) k, or 64 ceil(ceil(K/S)/64) where K is a multiple of 64 (FPRev trees
    // on the H200, bench/results/2026-12-01-h200-gemm-wmma.md).
    {"wmma", "bf16", "bf16", "hw:k=16,frac=25", 8, true,
     "bit-exact on all 61 bf16 shapes (199,634 outputs) of the H200 capture", kFromName, 64},
    {"wmma", "bf16", "fp32", "hw:k=16,frac=25", 8, true,
     "bit-exact on all 61 bf16 shapes (199,634 outputs) of the H200 capture", kFromName, 64},
    {"wmma", "fp16", "fp16", "hw:k=16,frac=25", 8, true,
     "bit-exact on all 183 fp16 shapes (1,110,687 outputs) of the H200 capture", kFromName, 64},
    {"wmma", "fp16", "fp32", "hw:k=16,frac=25", 8, true,
     "bit-exact on all 183 fp16 shapes (1,110,687 outputs) of the H200 capture", kFromName, 64},
    // TF32 (issue 30, 2026-12-01): sm80 xmma TF32 kernels (sm80_xmma_gemm_*tf32*, mma.sync
    // m16n8k8, never split on the H100 or H200: S = 1, no reduction) and CUTLASS TF32 s1688gemm
    // (cutlass_80_tensorop_s1688gemm_*), whose mainloop runs the k-tile residue of each split
    // part first (FPRev trees, bench/results/2026-12-01-h200-gemm-campaign.md).
    // s16816gemm (cutlass_80_tensorop_*s16816gemm_*, mma.sync m16n8k16): MMA-Sim's Hopper k = 16
    // unit, the k-tile of the name with its residue first, split parts of 8 ceil(ceil(K/S)/8) k
    // (FPRev trees of 20 H200 and 9 H100 shapes; bench/results/2026-12-01-h200-gemm-tc.md), or
    // 64 ceil(ceil(K/S)/64) where K is a multiple of 64, as wmma (fitted on the held-out capture
    // of seed 20261202, checked on that of seed 20261203 unchanged:
    // bench/results/2026-12-02-h200-gemm-tc-heldout.md).
    {"s16816gemm", "bf16", "bf16", "hw:k=16,frac=25", 8, true, kS16816Evidence, kFromName, 64},
    {"s16816gemm", "bf16", "fp32", "hw:k=16,frac=25", 8, true, kS16816Evidence, kFromName, 64},
    {"s16816gemm", "fp16", "fp16", "hw:k=16,frac=25", 8, true, kS16816Evidence, kFromName, 64},
    {"s16816gemm", "fp16", "fp32", "hw:k=16,frac=25", 8, true, kS16816Evidence, kFromName, 64},
    // nvjet_sm90_* (wgmma, k = 16): groups of 16 k from each part's start (no k-tile residue
    // first), split parts of 64 ceil(ceil(K/split)/64) k, split = CTAs / tiles (grid_split).
    {"nvjet", "bf16", "bf16", "hw:k=16,frac=25", 64, true, kNvjetEvidence, 0, 0, "nvjet_sm90_",
     false, true},
    {"nvjet", "bf16", "fp32", "hw:k=16,frac=25", 64, true, kNvjetEvidence, 0, 0, "nvjet_sm90_",
     false, true},
    {"nvjet", "fp16", "fp16", "hw:k=16,frac=25", 64, true, kNvjetEvidence, 0, 0, "nvjet_sm90_",
     false, true},
    {"nvjet", "fp16", "fp32", "hw:k=16,frac=25", 64, true, kNvjetEvidence, 0, 0, "nvjet_sm90_",
     false, true},
    {"xmma_tf32", "tf32", "fp32", "hw:k=8,frac=25,tf32=rne", 4, true,
     "bit-exact on all 426 captured H100 and all 160 captured H200 TF32 shapes of the sm80 "
     "kernel",
     0, 0, "sm80_xmma_gemm_"},
    // The sm90 xmma TF32 segment-k kernel (wgmma, k = 8): one shape (338x344x12676 on the
    // H200, 4 segments of 99, 99, 99, 100 k-tiles added as a tree) reproduced; not verified.
    {"xmma_tf32", "tf32", "fp32", "hw:k=8,frac=25,tf32=rne", 4, false,
     "fitted on the one captured shape (H200 338x344x12676, every output); held out (seeds "
     "20261202, 20261203): 5 shapes with a rule, outputs equal, 3 with none (the 64x128 "
     "kernel's grid is 12x6 at every shape seen: its CTAs need not give the segments)",
     0, 0, "sm90_xmma_gemm_", false, false, 0, true},
    {"s1688gemm_tf32", "tf32", "fp32", "hw:k=8,frac=25,tf32=rne", 4, true,
     "the FPRev trees of 32 shapes on the H100 and the H200; every output of the 112 captured "
     "H200 shapes of the family with their records; held-out capture seed 20261202: FPRev "
     "trees of 18 shapes equal, every output of its 350 shapes (243,222 outputs); seed "
     "20261203: trees of 20 shapes equal, every output of its 350 shapes (251,768), 0 "
     "mismatching with the 32-k parts (whole k-tiles, fitted on 2 shapes of seed 20261201, held "
     "out on 4 of seed 20261202 and 2 of seed 20261203, missed at 31x32x848 and 56x461x816)",
     kFromName, 0, nullptr, true},
    // sm80 xmma FFMA (SGEMM on the CUDA cores; also for TF32 requests, which read the fp32
    // values unrounded): k-tiles round-robin over the gridDim.z CTAs (xmma_slices above).
    {"xmma_ffma", "fp32", "fp32", "fp32-seq", 0, true,
     "every FPRev tree of the family (56 shapes, H100 and H200) and every output of all 50 "
     "captured H200 shapes of the family",
     0, 0, nullptr, false, false, 0, false, true},
    {"xmma_ffma", "tf32", "fp32", "fp32-seq", 0, false,
     "the fp32 rule; no TF32-request output of the family was captured", 0, 0, nullptr, false,
     false, 0, false, true},
};

// The k-tile T of an xmma name's tilesize<M>x<N>x<T> (0 if it has none).
std::size_t xmma_ktile(const std::string& key) {
  const std::size_t p = key.find("tilesize");
  if (p == std::string::npos) return 0;
  std::size_t i = p + 8, f[3] = {0, 0, 0};
  for (int n = 0; n < 3; ++n) {
    const std::size_t q = i;
    while (i < key.size() && key[i] >= '0' && key[i] <= '9') f[n] = f[n] * 10 + (key[i++] - '0');
    if (i == q || (n < 2 && (i >= key.size() || key[i++] != 'x'))) return 0;
  }
  return f[2];
}

// The k-tile T of a CUTLASS kernel name's _<M>x<N>_<T>x<stages>_ (0 if it has none).
std::size_t name_ktile(const std::string& key) {
  // The first "_AxB_CxD_" whose four fields are numbers: C.
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '_') continue;
    std::size_t p = i + 1;
    std::size_t f[4] = {0, 0, 0, 0};
    bool ok = true;
    for (int n = 0; n < 4 && ok; ++n) {
      const std::size_t q = p;
      while (p < key.size() && key[p] >= '0' && key[p] <= '9') f[n] = f[n] * 10 + (key[p++] - '0');
      const char want = n % 2 == 0 ? 'x' : '_';
      ok = p > q && p < key.size() && key[p] == want;
      ++p;
    }
    if (ok) return f[2];
  }
  return 0;
}

// The CTA tiles of an nvjet launch (FamilyRule::grid_split): the name's
// nvjet_sm90_<types>_<a>x<b>_<k>x<k2>_<cx>x<cy>_..., 0 if it has no such fields or M, N are 0.
std::size_t nvjet_tiles(const std::string& key, std::size_t M, std::size_t N) {
  const std::string pre = "nvjet_sm90_";
  if (key.rfind(pre, 0) != 0 || M == 0 || N == 0) return 0;
  std::size_t p = key.find('_', pre.size());  // after <types>
  std::size_t f[6] = {0, 0, 0, 0, 0, 0};
  for (int n = 0; n < 6; ++n) {
    if (p == std::string::npos || p + 1 >= key.size()) return 0;
    ++p;  // the separator: '_' before a pair, 'x' inside one
    const std::size_t q = p;
    while (p < key.size() && key[p] >= '0' && key[p] <= '9') f[n] = f[n] * 10 + (key[p++] - '0');
    const char want = n % 2 == 0 ? 'x' : '_';
    if (p == q || p >= key.size() || key[p] != want || f[n] == 0) return 0;
  }
  auto pad = [](std::size_t v, std::size_t c) { return c * ((v + c - 1) / c); };
  const std::size_t a = f[0], b = f[1], cx = f[4], cy = f[5];
  return pad((N + a - 1) / a, cx) * pad((M + b - 1) / b, cy);
}

// The output tiles and k-tile of an sm90 xmma segment-k launch (FamilyRule::segment_k): the
// name's _tilesize<a>x<b>x<T>_ (a along M, b along N); {0, 0} without it or M, N unknown.
std::pair<std::size_t, std::size_t> segment_tiles(const std::string& key, std::size_t M,
                                                  std::size_t N) {
  const std::string tag = "_tilesize";
  const std::size_t at = key.find(tag);
  if (at == std::string::npos || M == 0 || N == 0) return {0, 0};
  std::size_t p = at + tag.size();
  std::size_t f[3] = {0, 0, 0};
  for (int n = 0; n < 3; ++n) {
    const std::size_t q = p;
    while (p < key.size() && key[p] >= '0' && key[p] <= '9') f[n] = f[n] * 10 + (key[p++] - '0');
    const char want = n < 2 ? 'x' : '_';
    if (p == q || p >= key.size() || key[p] != want || f[n] == 0) return {0, 0};
    ++p;
  }
  return {((M + f[0] - 1) / f[0]) * ((N + f[1] - 1) / f[1]), f[2]};
}

std::string record_name(const LaunchRecord& r) {
  return launch_record_name(r);
}

// The xmma FFMA rule (FamilyRule::xmma_slices) for record r.
LaunchRule xmma_rule(const FamilyRule& rule, const LaunchRecord& r) {
  LaunchRule lr;
  const bool split_k = r.reduce == "xmma_split_k";
  if (!r.reduce.empty() && !split_k) {
    lr.why = record_name(r) + ": a reduction other than xmma's split_k kernel is not a case the " +
             "family rule covers";
    return lr;
  }
  const std::size_t T = xmma_ktile(r.key);
  if (T == 0) {
    lr.why = record_name(r) + ": the kernel's name holds no tilesize<M>x<N>x<T>, which the " +
             "family rule needs";
    return lr;
  }
  if (r.split > 4096) {
    lr.why = record_name(r) + ": more than 4096 CTAs along K is not a case the family rule covers";
    return lr;
  }
  std::string model = rule.base;
  if (r.split > 1) {
    model += ":lanes=" + std::to_string(r.split) + ",vec=" + std::to_string(T) +
             (split_k ? ",lanesum=seq" : ",lanesum=fold");
  }
  // The split counts the trees and outputs covered: split_k 2 .. 88, the in-kernel fold 16 ..
  // 264 (every S the records hold); outside them, announced.
  const bool seen = r.split == 1 || (split_k ? r.split <= 88 : r.split >= 16 && r.split <= 264);
  const bool verified = rule.verified && seen;
  lr.model = model;
  lr.status = verified ? LaunchRule::Status::verified : LaunchRule::Status::unverified;
  lr.why = record_name(r) + " -> " + model +
           (verified ? " (verified family: " : " (family rule not verified: ") +
           (seen ? std::string(rule.evidence)
                 : "a split count outside those of the trees and outputs checked (split_k 2 "
                   "to 88, in-kernel 16 to 264)") +
           ")";
  return lr;
}

// cuBLAS's CUDA-core gemv / dot / small-N kernels with fp32 (or TF32-request) operands, whose
// order lies in the kernel's template arguments (bench/results/2026-12-01-h200-gemm-simt.md;
// replica: bench/peers/gemm_launch_rules.py's cuda_core_rule):
// - dot_kernel<float, 128, 0> + reduce_1Block: `fp32-seq:dot=S`, S = gridDim.x (the record's S
//   for this family);
// - gemmSN_TN_kernel<float, 128, 16, 2, 4, ...>: 16 strided lanes, each restarting every 16 of
//   its k, added in lane order; also for bf16/fp16 inputs with their own output type (the
//   kernel computes in float: the same chain on the widened values, then the output rounding);
// - gemvx::kernel<..., 6, ...> (blocks of 2x32): 2 lanes of one contiguous run each;
//   gemvx::kernel<..., 7, ...> (32x4): 32 lanes by the halving tree, one contiguous run each up to
//   K = 513 and strided from K = 644 (no launch between seen: announced there); with
//   splitKreduce: parts of ceil(K/S) k, 32 strided lanes each.
constexpr const char* kGemvxF32 = "internal::gemvx::kernel<int, int, float, float, float, float, ";
constexpr std::size_t kGemvxVecMax = 513, kGemvxStridedMin = 644;

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// The same kernels with bf16/fp16 inputs (16-bit loads, fp32 FMA chains: a product of two
// 16-bit values is exact in fp32, so the fp32 rule's order is the whole model; a 16-bit output
// is the fp32 result rounded to nearest even). The template holds the input type T and the
// output type X (T, or float for an fp32 output); bench/results/2026-12-02-h200-gemm-simt16.md:
// - dot_kernel<float, 128, 0> + reduce_1Block: `fp32-seq:dot=S` (16-bit records: S = 31, 32,
//   64, 128, 496);
// - gemmSN_TN_kernel<float, 128, 16, 2, 4, ...>: the fp32 rule;
// - gemvx::kernel<int, int, T, X, X, float, true, true, true, false, 7, ...> (2x64 blocks):
//   2 lanes of one contiguous run each; <..., true, ..., 8, ...> (4x64, fp16): 4 lanes, one run
//   each, the halving tree; <..., false, true, true, false, 6, ...> (16x4, fp16): 16 lanes, one
//   run each; <..., false, true, true, false, 7, ...> (32x4): 32 lanes by the halving tree, one
//   contiguous run each up to a K bound of the input type, strided above it where the launch
//   has many CTAs (ceil(M N / 4)); with few CTAs above the bound (fp16 3x1x857, 15x1x886: 1
//   and 4 CTAs) one run each again: announced there;
// - gemv2T_kernel_val<int, int, T, float, float, float, 128, 16, 4, 4, false, false, ...> +
//   splitKreduce/f32 (a new family): S = gridDim.z parts of ceil(K/S) k, each over 16 strided
//   lanes whose FMA chains restart every 32 of their k, the lanes added in lane order, the parts
//   in part order.
// 32x4 gemvx: per input type the largest K with one run per lane seen, the smallest strided
// K, and the fewest CTAs a strided launch was seen with (FPRev trees and outputs, H200).
struct Gemvx16Bounds {
  const char* in;
  std::size_t vec_max, strided_min, strided_ctas;
};
constexpr Gemvx16Bounds kGemvx16[] = {{"bf16", 700, 758, 21}, {"fp16", 523, 758, 25}};
// The largest K of the 4x64 and 16x4 fp16 kernels' trees (their launches' K: 58 .. 133, 62 .. 700).
constexpr std::size_t kGemvx4x64Max = 121, kGemvx16x4Max = 700;

bool cuda_core_rule16(const LaunchRecord& r, const std::string& in, const std::string& out,
                      std::size_t M, std::size_t N, std::size_t K, std::string& model,
                      std::string& evidence, bool& verified) {
  const std::string T = in == "bf16" ? "__nv_bfloat16" : "__half";
  const std::string X = out == "fp32" ? "float" : T;
  if (out != "fp32" && out != in) return false;
  verified = true;
  // dot_kernel and gemmSN name the input type only in their parameter types.
  const bool typed =
      r.key.find("cublasGemvTensorStridedBatched<" + T + " const>") != std::string::npos;
  if (typed && r.family == "dot" && starts(r.key, "dot_kernel<float, 128, 0,") &&
      r.reduce == "reduce_1Block") {
    model = "fp32-seq:dot=" + std::to_string(r.split);
    evidence =
        "every FPRev tree (H200: the 8,020-shape plan's and the capture of 2026-12-02) and every "
        "output of the captured shapes of the family (seeds 20261201, 20261204)";
    // 16-bit trees and outputs hold 31, 32, 64 and 496 CTAs; fp32 ones 16 and 66.
    if ((r.split < 16 || r.split > 66) && r.split != 496) {
      verified = false;
      evidence = "a CTA count outside the 16 to 66 and 496 of the trees and outputs checked";
    }
    return true;
  }
  if (typed && r.family == "gemmSN" && starts(r.key, "gemmSN_TN_kernel<float, 128, 16, 2, 4, ") &&
      r.reduce.empty() && r.split == 1) {
    model = "fp32-seq:lanes=16,lanesum=seq,lanechunk=16";
    evidence =
        "every FPRev tree (H200: the 8,020-shape plan's and the capture of 2026-12-02) and every "
        "output of the captured shapes of the family (seeds 20261201, 20261204); also every "
        "16-bit output of bitsandbytes' dequantize + F.linear on the H200 (9 (shape, output)s, "
        "49,087 outputs; bench/results/2026-12-02-h200-qlora-linear.md)";
    return true;
  }
  const std::string gx =
      "internal::gemvx::kernel<int, int, " + T + ", " + X + ", " + X + ", float, ";
  if (r.family == "gemvx" && starts(r.key, gx.c_str()) && r.reduce.empty() && r.split == 1) {
    const std::string rest = r.key.substr(gx.size());
    const std::string trees = "FPRev trees of the kernel on the H200 (the 8,020-shape plan and ";
    if (starts(rest, "true, true, true, false, 7, false,")) {
      model = "fp32-seq:lanes=2,vec=auto";
      evidence = trees +
                 "the capture of 2026-12-02) and every output of its captured shapes (seeds "
                 "20261201, 20261204)";
      return true;
    }
    if (in == "fp16" && (starts(rest, "true, true, true, false, 8, false,") ||
                         starts(rest, "false, true, true, false, 6, false,"))) {
      const bool b4 = rest[0] == 't';
      model = b4 ? "fp32-seq:lanes=4,vec=auto" : "fp32-seq:lanes=16,vec=auto";
      const std::size_t kmax = b4 ? kGemvx4x64Max : kGemvx16x4Max;
      evidence = trees + "the capture of 2026-12-02, K up to " + std::to_string(kmax) +
                 ") and every output of its captured shapes (seeds 20261201, 20261204)";
      if (K > kmax) {
        verified = false;
        evidence = "K above the " + std::to_string(kmax) + " of the kernel's FPRev trees";
      }
      return true;
    }
    if (starts(rest, "false, true, true, false, 7, false,")) {
      const Gemvx16Bounds& b = in == "bf16" ? kGemvx16[0] : kGemvx16[1];
      const std::size_t ctas = (M * N + 3) / 4;
      const bool strided = K > b.vec_max && ctas >= b.strided_ctas;
      model = strided ? "fp32-seq:lanes=32" : "fp32-seq:lanes=32,vec=auto";
      evidence = trees +
                 "the capture of 2026-12-02, K sweeps) and every output of its captured shapes "
                 "(seeds 20261201, 20261204)";
      if (K > b.vec_max && (K < b.strided_min || !strided)) {
        verified = false;
        evidence =
            "K " + std::to_string(K) + " above the " + std::to_string(b.vec_max) +
            " of one run per lane" +
            (strided ? " and below the " + std::to_string(b.strided_min) + " of strided lanes"
                     : " with " + std::to_string(ctas) + " CTAs, fewer than the " +
                           std::to_string(b.strided_ctas) + " strided lanes were seen with");
      }
      return true;
    }
    return false;
  }
  if (r.family == "gemv2" &&
      starts(r.key, ("gemv2T_kernel_val<int, int, " + T +
                     ", float, float, float, 128, 16, 4, 4, false, false, ")
                        .c_str()) &&
      r.reduce == "splitKreduce/f32" && r.split > 1) {
    model = "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=" + std::to_string(r.split);
    evidence =
        "every FPRev tree (H200: the 8,020-shape plan's and the capture of 2026-12-02) and every "
        "output of the captured shapes of the family (seeds 20261201, 20261204)";
    return true;
  }
  return false;
}

LaunchRule cuda_core_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                          std::size_t M, std::size_t N, std::size_t K) {
  LaunchRule lr;
  std::string model, evidence;
  bool verified = true;
  const bool cc = (in == "fp32" || in == "tf32") && out == "fp32";
  if (in == "bf16" || in == "fp16") {
    if (!cuda_core_rule16(r, in, out, M, N, K, model, evidence, verified)) model.clear();
  }
  if (cc && r.family == "dot" && starts(r.key, "dot_kernel<float, 128, 0,") &&
      r.reduce == "reduce_1Block") {
    model = "fp32-seq:dot=" + std::to_string(r.split);
    evidence =
        "every FPRev tree (fp32 20 shapes on the H100 and the H200, TF32 20) and every "
        "output of all 11 fp32 and 5 TF32 captured H200 shapes of the family";
    // Trees and outputs hold 16 and 66 CTAs (the records also 8, 32, 33): announced outside.
    if (r.split < 16 || r.split > 66) {
      verified = false;
      evidence = "a CTA count outside the 16 to 66 of the trees and outputs checked";
    }
  } else if (cc && r.family == "gemmSN" &&
             starts(r.key, "gemmSN_TN_kernel<float, 128, 16, 2, 4, ") && r.reduce.empty() &&
             r.split == 1) {
    model = "fp32-seq:lanes=16,lanesum=seq,lanechunk=16";
    evidence =
        "every FPRev tree (7 shapes, H100 and H200) and every output of all 55 captured "
        "H200 fp32 shapes of the family";
  } else if (cc && r.family == "gemvx" && starts(r.key, kGemvxF32)) {
    const std::string rest = r.key.substr(std::strlen(kGemvxF32));
    const bool v6 = starts(rest, "true, true, true, false, 6, false,");
    const bool v7 = starts(rest, "false, true, true, false, 7, false,");
    const bool v7s = starts(rest, "false, true, false, false, 7, false,");
    evidence =
        "every FPRev tree of the kernel (H100 and H200) and every output of all 19 fp32 "
        "and 30 TF32 captured H200 shapes of the family";
    if (v6 && r.reduce.empty() && r.split == 1) {
      model = "fp32-seq:lanes=2,vec=auto";
    } else if (v7 && r.reduce.empty() && r.split == 1) {
      model = K <= kGemvxVecMax ? "fp32-seq:lanes=32,vec=auto" : "fp32-seq:lanes=32";
      if (K > kGemvxVecMax && K < kGemvxStridedMin) {
        verified = false;
        evidence =
            "K between 513 (one run per lane seen) and 644 (strided lanes seen): no "
            "launch of this K was captured";
      }
    } else if ((v7 || v7s) && r.reduce == "splitKreduce/f32") {
      model = "fp32-seq:lanes=32,split=" + std::to_string(r.split);
      verified = in == "tf32";
      if (!verified) {
        evidence =
            "the FPRev tree of one fp32 shape and the TF32-request outputs; no fp32 "
            "output of this launch was captured";
      }
    }
  }
  if (model.empty()) {
    lr.why =
        record_name(r) + ": exmy has no rule for this kernel with " + in + " in, " + out + " out";
    return lr;
  }
  lr.model = model;
  lr.status = verified ? LaunchRule::Status::verified : LaunchRule::Status::unverified;
  lr.why = record_name(r) + " -> " + model +
           (verified ? " (verified family: " : " (family rule not verified: ") + evidence + ")";
  return lr;
}

// cuBLASLt's blockwise-scaled FP8 GEMM (torch._scaled_mm with fp32 tile scales; SEMANTICS 15.7),
// input type e4m3fn:PAIR. nvjet_sm90_qq* kernels: per 128-k block the e8m13 WGMMA sum, promoted
// into the fp32 accumulator with the block's scales. The equation follows the kernel's scaling
// in its name, not torch's pair: a 128x128-block operand (_Ablk128_ / _Bblk128_) `product`, also
// where torch's pair is 1x128 . 1x128 with M = 1 (cuBLASLt runs the Bblk128 kernel there:
// a-first 141 of 256 fp32 outputs off, product 0); 1x128 . 1x128 kernels promote=cublas
// (a-first; b-first for one k-block). The _splitK kernels with splitKreduce: S = CTAs / the name's
// tiles (nvjet_tiles), CTA z accumulates k-blocks [z P, (z + 1) P) from +0 with P = T ceil(ceil(K /
// T) / S) k, T = 512 for the kernels with a 128x128-block operand (..._Ablk128_... /
// ..._Bblk128_...) and 128 for 1x128 . 1x128 (..._Avec128_Bvec128_...), and splitKreduce adds the S
// fp32 parts in part order: `split=S,tile=T,fill`. FPRev trees over k-blocks of 40 launches and
// every output of 94 captured (shape, pair, output)s
// (bench/results/2026-12-02-h200-blockfp8-splitk.md).
constexpr const char* kBlockwiseBase = "hw:k=32,frac=13,inter=13,chunk=128,promote=";
constexpr const char* kBlockwiseEvidence =
    "H200, cuBLAS 130100: FPRev trees over k-blocks of 40 split-K launches (89,434 counts) and "
    "every output of the captured split-K and plain launches of seed 20261203, 0 mismatching "
    "(bench/results/2026-12-02-h200-blockfp8-splitk.md); plain launches also "
    "bench/results/2026-12-01-h200-blockfp8-gemm.md";

LaunchRule blockwise_rule(const LaunchRecord& r, std::size_t M, std::size_t N) {
  LaunchRule lr;
  if (r.family != "nvjet" || r.key.rfind("nvjet_sm90_qq", 0) != 0) {
    lr.why = record_name(r) + ": exmy has no rule for this kernel with tile-scaled FP8 in";
    return lr;
  }
  const bool blk = r.key.find("blk128") != std::string::npos;
  std::string model = std::string(kBlockwiseBase) + (blk ? "product" : "cublas");
  if (r.key.find("_splitK") == std::string::npos) {
    if (!r.reduce.empty()) {
      lr.why = record_name(r) +
               ": a reduction after a kernel without split-K is not a case the "
               "blockwise rule covers";
      return lr;
    }
  } else {
    const std::size_t tiles = nvjet_tiles(r.key, M, N);
    if (r.reduce != "splitKreduce/f32" || tiles == 0 || r.split % tiles != 0) {
      lr.why = record_name(r) + ": a split-K kernel without splitKreduce of fp32 parts, or CTAs " +
               "that are not a multiple of the name's tiles (" + std::to_string(tiles) + ")";
      return lr;
    }
    const std::size_t S = r.split / tiles;
    const std::size_t T = blk ? 512 : 128;
    if (S > 1) model += ",split=" + std::to_string(S) + ",tile=" + std::to_string(T) + ",fill";
  }
  lr.model = model;
  lr.status = LaunchRule::Status::verified;
  lr.why = record_name(r) + " -> " + model + " (verified: " + kBlockwiseEvidence + ")";
  return lr;
}

}  // namespace

std::string launch_record_name(const LaunchRecord& r) {
  // nvjet's records hold the CTA count (its split is in the grid's x y; FamilyRule::grid_split).
  const bool ctas = r.family == "nvjet" || r.key.find("segment_k") != std::string::npos;
  return "launch record " + r.family + " (" + r.key + ")" + (ctas ? " CTAs " : " split ") +
         std::to_string(r.split) + (r.reduce.empty() ? "" : " + " + r.reduce);
}

LaunchRule launch_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                       std::size_t K) {
  return launch_rule(r, in, out, 0, 0, K);
}

LaunchRule launch_rule(const LaunchRecord& r, const std::string& in, const std::string& out,
                       std::size_t M, std::size_t N, std::size_t K) {
  if (is_blockwise_type(in)) return blockwise_rule(r, M, N);
  if (r.family == "dot" || r.family == "gemmSN" || r.family == "gemvx" || r.family == "gemv2") {
    return cuda_core_rule(r, in, out, M, N, K);
  }
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
  if (rule->xmma_slices) return xmma_rule(*rule, r);
  const bool split_reduce = r.reduce.rfind("splitKreduce/", 0) == 0;
  std::size_t split = r.split;
  if (rule->segment_k) {
    const auto [tiles, T] = segment_tiles(r.key, M, N);
    if (r.key.find("segment_k") == std::string::npos || tiles == 0 || r.split % tiles != 0 ||
        !r.reduce.empty()) {
      lr.why = record_name(r) + ": its " + std::to_string(r.split) + " CTAs are not a multiple " +
               "of the name's tiles (" + std::to_string(tiles) + "), or a reduction followed, " +
               "or it is no segment-k kernel";
      return lr;
    }
    const std::size_t seg = r.split / tiles;
    std::string model = rule->base;
    if (seg > 1) {
      model += ",split=" + std::to_string(seg) + ",tile=" + std::to_string(T) + ",tail,tree";
    }
    lr.model = model;
    lr.status = rule->verified ? LaunchRule::Status::verified : LaunchRule::Status::unverified;
    lr.why = record_name(r) + " -> " + model +
             (rule->verified ? " (verified family: " : " (family rule not verified: ") +
             rule->evidence + ")";
    return lr;
  }
  if (rule->grid_split) {
    const std::size_t tiles = nvjet_tiles(r.key, M, N);
    if (tiles == 0 || r.split % tiles != 0) {
      lr.why = record_name(r) + ": its " + std::to_string(r.split) + " CTAs are not a multiple " +
               "of the name's tiles (" + std::to_string(tiles) + " at " + std::to_string(M) + "x" +
               std::to_string(N) + "), which the family rule needs";
      return lr;
    }
    split = r.split / tiles;
  }
  if (split > 1 && !split_reduce) {
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
  std::size_t T = 0;
  if (rule->ktile != 0) {
    T = rule->ktile == kFromName ? name_ktile(r.key) : static_cast<std::size_t>(rule->ktile);
    if (T == 0) {
      lr.why = record_name(r) + ": the kernel's name holds no k-tile (_MxN_TxS_), which the " +
               "family rule needs";
      return lr;
    }
    model += ",ktile=" + std::to_string(T);
    try {
      (void)parse_accum_model(model, 16);
    } catch (const InputError&) {  // a k-tile that is not a multiple of the instruction's k
      lr.why = record_name(r) + ": the kernel's k-tile " + std::to_string(T) +
               " is not a multiple of the family's instruction k";
      return lr;
    }
  }
  bool tile_gap = false;   // 32-k units vs whole k-tiles: decided by 2 fitted shapes only
  bool floor_gap = false;  // nvjet: cuBLAS's floor(K/S) part leaves k unaccumulated
  std::size_t floor_P = 0;
  if (split_reduce) {
    const bool aligned = rule->aligned_unit > 0 && K % rule->aligned_unit == 0;
    std::size_t P = split_part(K, split, aligned ? rule->aligned_unit : rule->unit);
    if (rule->tile_parts) {
      constexpr std::size_t U = 32;
      const std::size_t unit_P = split_part(K, split, rule->unit);
      P = K % U == 0 && K >= U * split ? split_part(K, split, U) : unit_P;
      // The earlier clause's part: where the two differ, only the 2 fitted shapes decide.
      const bool whole_tiles = T > 0 && K % T == 0 && K >= T * split;
      tile_gap = P != (whole_tiles ? split_part(K, split, T) : unit_P);
    }
    if (rule->grid_split && split > 1) {
      // 64 ceil(floor(K/S)/64) differs from P only where floor(K/S) is a multiple of 64 and S
      // does not divide K; then S such parts end before K (the H200's fp16 4x8x14792, and all
      // 215 short GEMMs of the all-ones scan, each exactly S floor_P k summed:
      // bench/results/2026-12-02-h200-cublas-short-gemms.md).
      floor_P = 64 * ((K / split + 63) / 64);
      floor_gap = floor_P != P;
    }
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
  lr.model = model;
  // A split with K a multiple of unverified_aligned: no captured shape checks the part size.
  const bool aligned_gap = rule->unverified_aligned > 0 && split_reduce && split > 1 &&
                           K % rule->unverified_aligned == 0;
  // The aligned parts on their one launch (FamilyRule::aligned_once), where the units differ.
  const bool once_gap =
      rule->aligned_once && split_reduce && rule->aligned_unit > 0 && K % rule->aligned_unit == 0 &&
      split_part(K, split, rule->aligned_unit) != split_part(K, split, rule->unit);
  const bool verified = rule->verified && !aligned_gap && !tile_gap && !floor_gap && !once_gap;
  lr.status = verified ? LaunchRule::Status::verified : LaunchRule::Status::unverified;
  lr.why =
      record_name(r) + " -> " + model +
      (verified ? " (verified family: " : " (family rule not verified: ") +
      (aligned_gap ? "no captured split shape of the family has K a multiple of " +
                         std::to_string(rule->unverified_aligned) + "; elsewhere: "
                   : std::string()) +
      (tile_gap ? std::string("whole 32-k units and whole k-tiles give different parts "
                              "here, which only the 2 shapes the 32-k rule was fitted on "
                              "decide (31x32x848, 56x461x816: 4-k parts); elsewhere: ")
                : std::string()) +
      (once_gap ? "parts of whole " + std::to_string(rule->aligned_unit) +
                      "-k units where K is a multiple of " + std::to_string(rule->aligned_unit) +
                      " (" + std::to_string(split_part(K, split, rule->aligned_unit)) + ", not " +
                      std::to_string(split_part(K, split, rule->unit)) +
                      " here) rest on one launch (H200 bf16 64x17x4160, 17 parts); "
                      "elsewhere: "
                : std::string()) +
      (floor_gap ? "the part may be 64 ceil(floor(K/S)/64) = " + std::to_string(floor_P) +
                       " here, which leaves the last " + std::to_string(K - split * floor_P) +
                       " k unaccumulated, as cuBLAS on the H200 did at fp16 4x8x14792 "
                       "(both outputs) and at all 215 such GEMMs of an all-ones scan of "
                       "K 1..16384 (24 type, M, N; exmy's rule on the first " +
                       std::to_string(split * floor_P) + " k reproduces it); elsewhere: "
                 : std::string()) +
      rule->evidence + ")";
  return lr;
}

}  // namespace exmy::gemm
