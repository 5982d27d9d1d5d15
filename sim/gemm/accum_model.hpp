// Accumulation models of a matrix product (docs/SEMANTICS.md 15): how the K products of one
// output element and the running accumulator are combined and rounded. Models are values; the
// hardware family is parameterised like microsoft/MMA-Sim's description of NVIDIA tensor cores.
#pragma once

#include <string>

#include "sim/native/float_format.hpp"
#include "sim/native/gemm_dot.hpp"

namespace exmy::gemm {

enum class AccumKind : std::uint8_t {
  exact,     // one rounding of the exact sum to the output format
  fp32_seq,  // c = fma_fp32(a_k, b_k, c) for k = 0 .. K-1
  pairwise,  // fp32 products (one rounding each), summed by a balanced fp32 tree, then + c
  hw,        // the fused k-group model below, group after group in k order
  amd,       // MMA-Sim's CDNA3 fused dot-add (SEMANTICS 15.2): truncate, floor, RNE per group
};

// The fused k-group model ("hw"): for each group of `k_group` consecutive k (the instruction's
// K), the accumulator c and the group's products a_k b_k are written as significand x 2^e with
// e = e_a + e_b (each operand's exponent with its significand in [1, 2), subnormals at the
// format's minimum exponent; products keep significands in [1, 4)); E = the largest e among c
// and the products; every term is truncated toward zero to `frac_bits` fraction bits below 2^E;
// the truncated terms are summed exactly; the sum is normalised to an fp32 value with
// `inter_bits` fraction bits (23: fp32; 13: Hopper FP8's e8m13), rounded toward zero
// (`inter_rne` = false) or to nearest even, with fp32's exponent range. That value is the next
// group's c. `split_k` > 1 splits K into that many contiguous chunks accumulated from 0 and
// added in fp32 (round to nearest even) in chunk order.
struct AccumModel {
  AccumKind kind = AccumKind::exact;
  int k_group = 16;
  int frac_bits = 25;
  int inter_bits = 23;
  bool inter_rne = false;
  bool truncate_tf32 = false;  // fp32 inputs read as tf32 (low 13 bits dropped), as MMA-Sim does
  int split_k = 1;
  // Split-K parts made of whole k-tiles of `tile` k (0: parts of ceil(K/S) k): with T = ceil(K /
  // tile) tiles, the first T mod S parts get one tile more than the others (`tail`: the last
  // T mod S parts; the partial tile then lies in the last part).
  int tile = 0;
  bool tile_tail = false;
  // `fill`: every part ceil(T / S) tiles from k = 0 (the last nonempty part short, later ones
  // empty; cuBLASLt's blockwise FP8 split-K, SEMANTICS 15.7).
  bool tile_fill = false;
  // How split-K parts are added: in part order (false) or as a balanced tree (left half of
  // floor(S/2) parts, recursively).
  bool reduce_tree = false;
  // Promotion: within each split-K part, every `chunk` consecutive k (0: never) the model's
  // accumulator restarts from +0 and the finished chunk is added to an fp32 accumulator (round
  // to nearest even), as a kernel that moves tensor-core partial sums into CUDA-core fp32
  // registers every few instructions.
  int chunk = 0;
  // Block-scaled hw (MMA-Sim's Blackwell mxf4 kinds): every `sub_group` consecutive k summed
  // exactly, times the scales' significands, one term at the scales' exponent (0: each product a
  // term, its exponent offset by the scales'). Needs block scales (gemm.hpp).
  int sub_group = 0;
  bool two_stage = false;  // amd: FP8 sums even and odd k separately first
  // How fp32 inputs become tf32 (truncate_tf32): toward zero (MMA-Sim's instruction model), to
  // nearest with ties away (cvt.rna.tf32.f32) or to nearest even (what cuBLASLt's TF32 kernels
  // were measured to feed).
  enum class Tf32Round : std::uint8_t { rz, rna, rne } tf32_round = Tf32Round::rz;
  // Reduced-precision split-K ("rp"; cuBLASLt's splitKreduce_kernel with 16-bit partials, which
  // torch allows by default: allow_{bf16,fp16}_reduced_precision_reduction): with a bf16/fp16
  // output, each chunk's fp32 sum is rounded (RNE) to the output format before the chunks are
  // added in fp32 in order from +0; an fp32 output is unchanged. Needs chunk, no split.
  bool rp = false;
  // fp32-seq over `lanes` threads (native::DotModel::lanes): lane of the part's j-th k is
  // (j / vec) mod lanes (vec 0: `vec=auto`, ceil(part length / lanes)); lanes added by the
  // halving tree, in lane order (seq) or by the xmma fold (native::DotModel::LaneSum). cuBLAS's
  // gemvx, gemmSN and sm80 xmma FFMA kernels (SEMANTICS 15.2).
  int lanes = 1;
  int vec = 1;
  native::DotModel::LaneSum lane_sum = native::DotModel::LaneSum::tree;
  // fp32-seq as cuBLAS's dot_kernel + reduce_1Block over this many CTAs (native::DotModel::
  // dot_ctas; 0: not).
  int dot_ctas = 0;
  int lane_chunk = 0;  // native::DotModel::lane_chunk (lanes=L,lanechunk=C)
  // hw, amd: k-tiles of `ktile` k with the residue first (native::DotModel::ktile; 0: none):
  // every accumulation from +0 runs its first (length mod ktile) k, then whole tiles, the groups
  // starting at each tile's beginning. CUTLASS 2.x kernels with a K that is not a multiple of
  // their k-tile (cuBLAS's wmma and s1688gemm, SEMANTICS 15.6).
  int ktile = 0;
  // cublas-sm90 with 16-bit or fp32 (TF32) inputs: the promotion chunk depends on the shape and
  // is taken from the probed profile by model_for_shape (SEMANTICS 15.4).
  bool by_shape = false;
  // cublas-sm90 (every input type): a library's measured model, which holds on the shapes it was
  // verified on; model_for_shape says whether a shape lies in that set.
  bool library = false;
  // cublas-sm90-NAME: the GPU whose launch records and verified set apply ("h100", "h200";
  // gemm_profile.hpp's gpu_name). "" (cublas-sm90): every sm90 GPU of the profile, a GEMM
  // whose launch differs between them announced (SEMANTICS 15.6).
  std::string gpu;
  // Tile scales (fp32 per 1xC / RxC tile, SEMANTICS 15.7): how a finished promotion chunk p is
  // scaled into the fp32 accumulator y. a-first fma(RN32(p sa), sb, y), b-first
  // fma(RN32(p sb), sa, y), product fma(p, RN32(sa sb), y); cublas: as measured on an H200
  // (1-D x 1-D a-first, b-first with a single k-block; a 2-D operand: product); te: as
  // TransformerEngine's cuBLAS reference documents it (A 1-D: a-first; A 2-D, B 1-D: b-first;
  // both 2-D: product); cutlass: CUTLASS's sm90 blockwise mainloop (both operands with several
  // scales per 128-row CTA tile: a-first, else product). Resolved by operand_model.
  enum class Promote : std::uint8_t {
    unset,
    a_first,
    b_first,
    product,
    cublas,
    te,
    cutlass
  } promote = Promote::unset;
  std::string name;  // the string it was parsed from, for messages and provenance
};

// Parses exact | fp32-seq | pairwise |
// fp32-seq:[chunk=P | lanes=L[,vec=V|auto][,lanesum=tree|seq|fold][,lanechunk=C]]
//   [,split=S[,tile=T[,tail|fill]][,tree]] |
// fp32-seq:dot=G |
// hw:k=K,frac=N[,inter=M][,rne][,tf32[=rz|rna|rne]][,ktile=T][,split=S[,tile=T[,tail|fill]][,tree]]
//   [,chunk=P[,rp]] |
//   [,promote=a-first|b-first|product|cublas|te|cutlass] |
// a preset: sm80 | sm90 | sm100 | cublas-sm90 (sm90 with the instruction K of the input type) |
// deepgemm | cutlass-sm90 (FP8: sm90 with chunk=128 and promote=product / cutlass) |
// cublas-sm90-NAME (cublas-sm90 with one GPU's launch records: cublas-sm90-h100, -h200).
// Presets depend on the input formats: `a_bits` is the larger code width of A and B (8: FP8,
// 16: bf16/fp16, 32: fp32/tf32). InputError names the string and the grammar.
AccumModel parse_accum_model(const std::string& text, int a_bits);

// The model as the plain data the host/device dot product runs (sim/native/gemm_dot.hpp); not
// for `exact`, which only the CPU reference computes (MPFR).
inline native::DotModel dot_model(const AccumModel& m) {
  native::DotModel d;
  d.kind = m.kind == AccumKind::fp32_seq   ? native::DotModel::Kind::fp32_seq
           : m.kind == AccumKind::pairwise ? native::DotModel::Kind::pairwise
           : m.kind == AccumKind::amd      ? native::DotModel::Kind::amd
                                           : native::DotModel::Kind::hw;
  d.two_stage = m.two_stage;
  d.k_group = m.k_group;
  d.frac_bits = m.frac_bits;
  d.inter_bits = m.inter_bits;
  d.inter_rne = m.inter_rne;
  d.split_k = m.split_k;
  d.tile = m.tile;
  d.tile_tail = m.tile_tail;
  d.tile_fill = m.tile_fill;
  d.reduce_tree = m.reduce_tree;
  d.chunk = m.chunk;
  d.sub_group = m.sub_group;
  d.lanes = m.lanes;
  d.vec = m.vec;
  d.lane_sum = m.lane_sum;
  d.dot_ctas = m.dot_ctas;
  d.lane_chunk = m.lane_chunk;
  d.ktile = m.ktile;
  d.promote = m.promote == AccumModel::Promote::a_first   ? 1
              : m.promote == AccumModel::Promote::b_first ? 2
              : m.promote == AccumModel::Promote::product ? 3
                                                          : 0;
  return d;
}

// The model a GEMM with block scales runs (SEMANTICS 15.5). `sm100` becomes its block-scaled
// instruction: FP4 x FP4 (both operands at most 4 bits) kind::mxf4 / mxf4nvf4 = hw k=64, frac=35,
// sub=16; otherwise kind::mxf8f6f4 = hw k=32, frac=25. The Hopper/Ampere presets have no
// block-scaled instruction (InputError); explicit models run as written.
AccumModel block_scaled_model(const AccumModel& m, int a_value_bits, int b_value_bits);

std::string accum_model_help();

// The model a GEMM of this shape runs. For `cublas-sm90` with 16-bit or fp32 (TF32) inputs:
// the model tools/probe_gemm.py inferred on an H100 for this input type ("bf16", "fp16",
// "tf32", "fp32") and shape (golden/profiles/sm90/cublaslt-h100-gemm.json, compiled in,
// gemm_profile.hpp), or,
// for a shape it did not probe, the nearest probed shape's. `verified` says whether the shape
// lies in the set on which the model was checked against the library bit for bit (cublas-sm90
// FP8 too: its one rule, checked on the profile's FP8 shapes); `rule` names what was applied.
// Every model other than cublas-sm90 is returned as it is (verified: nothing to check).
//
// `out` ("fp32", "bf16", "fp16"; "" when unknown) selects the launch record of that GEMM in the
// profile: where one exists and the kernel family's rule is verified for the input and output
// type (launch_rules.hpp), its model is applied and the shape is verified; a record whose rule is
// not verified applies that rule unless the shape holds a verified model of its own, announced;
// without a record, the probed models as above (SEMANTICS 15.6).
struct ShapeModel {
  AccumModel model;
  bool measured = true;  // verified: the shape lies in the verified set
  std::string from;      // the rule applied ("nearest probed shape bf16 256x128x8192: hw:...")
  // The applied model as a model string parse_accum_model reads ("hw:k=16,frac=25,chunk=1408";
  // a model that is not a library preset: its own name). It runs the same arithmetic at any
  // shape, so a part of the GEMM (some rows of B) can be run under the whole GEMM's model.
  std::string spec;
};
ShapeModel model_for_shape(const AccumModel& m, std::size_t M, std::size_t N, std::size_t K,
                           const std::string& type, const std::string& out);
// The same with a given profile in place of cublas-sm90's (tests, other GPUs' profiles).
struct GemmProfile;
ShapeModel model_for_shape(const AccumModel& m, std::size_t M, std::size_t N, std::size_t K,
                           const std::string& type, const std::string& out,
                           const GemmProfile& profile);

// One line (no newline) for stderr when `s` was not verified at this shape: which rule was
// applied and that the shape lies outside the verified set. `who`: "exmy gemm", ...
std::string unverified_note(const std::string& who, const std::string& accum, const ShapeModel& s,
                            std::size_t M, std::size_t N, std::size_t K, const std::string& type);

}  // namespace exmy::gemm
