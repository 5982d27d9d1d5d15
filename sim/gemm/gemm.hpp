// The GEMM reference (docs/SEMANTICS.md 15): C = A B^T for A (M x K) and B (N x K), row-major,
// with inputs in any exmy float format of at most 16 bits, fp32 or tf32, under an accumulation
// model (accum_model.hpp), and the output rounded to fp32, bf16 or fp16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/gemm/accum_model.hpp"
#include "sim/native/float_format.hpp"

namespace exmy::gemm {

// An operand's elements as stored (read_operand maps its file; views such as the layer's
// transposes point into another array): fp32 values (4 bytes) or codes of 1 or 2 bytes, element
// (r, k) at data[r row_stride + k col_stride] (in elements). Codes decode through `table`
// (2^bits values). `keep` owns what data points into (the mapped file), if anything.
struct OperandStore {
  const void* data = nullptr;
  int elem_bytes = 4;
  std::size_t row_stride = 0, col_stride = 1;
  std::vector<double> table;
  std::shared_ptr<const void> keep;
};

// An operand's rows computed where the GEMM reads them (the layer's prepared operands: each
// element a function of a mapped input's, SEMANTICS 16): rows [r0, r1) as doubles, (r1 - r0) x
// cols row-major, into out.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual void rows_into(std::size_t r0, std::size_t r1, double* out) const = 0;
};

// One operand: values (exact in fp64: every format here has at most 24 significand bits and a
// range inside fp64's) and the exponent below which its values are subnormal (the hw model
// reads subnormal significands at that exponent). The values are either held as doubles (v),
// stay in their stored form (store, v empty) or are computed (source), and are decoded a few rows
// at a time (rows_into): a
// 1 GiB fp32 operand held as doubles would be 2 GiB (issue 36's memory bound).
struct Operand {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;  // rows x cols, row-major (empty when store is set)
  std::shared_ptr<const OperandStore> store;
  std::shared_ptr<const RowSource> source;  // or computed (v empty, store null)
  int emin = -126;
  int code_bits = 32;  // 8 / 16 / 32: selects the presets' instruction
  // "bf16", "fp16", "fp32", "tf32" or (read_operand) the format's name, e.g. "e4m3fn";
  // operand_from_codes writes "other" for formats that are not bf16/fp16: selects cublas-sm90's
  // model and verified set by shape (accum_model.hpp, model_for_shape).
  std::string type = "fp32";
  int value_bits = 32;  // the format's width (4 for e2m1): selects sm100's block-scaled kind
  // Block scales (MX: E8M0 per 32 k; NVFP4: UE4M3 per 16 k), rows x (cols / scale_block)
  // values, row-major; scale_block 0 = none. scale_emin: the scale format's minimum exponent
  // (E8M0 -127, UE4M3 -6). Held as values (scales) or as 8-bit codes (scale_codes, decoded by
  // scale_table; read_block_scales): doubles would be a quarter of an FP8 operand again.
  std::vector<double> scales;
  std::vector<std::uint8_t> scale_codes;
  std::vector<double> scale_table;
  std::size_t scale_block = 0;
  int scale_emin = -127;
  // Tile scales (fp32, SEMANTICS 15.7; DeepSeek-V3's 1x128 activations and 128x128 weights):
  // one per tile of tile_rows x tile_cols elements (rows x k), ceil(rows / tile_rows) x
  // ceil(cols / tile_cols) row-major; tile_cols 0 = none. Applied where a promotion chunk enters
  // the fp32 accumulator (AccumModel::promote), not inside the tensor-core sum.
  std::vector<float> tile_scales;
  std::size_t tile_rows = 0, tile_cols = 0;
  // Tile scale of (row r, k-block kb).
  float tile_scale(std::size_t r, std::size_t kb) const {
    return tile_scales[(r / tile_rows) * ((cols + tile_cols - 1) / tile_cols) + kb];
  }

  // Rows [r0, r1) as doubles, (r1 - r0) x cols row-major, into out.
  void rows_into(std::size_t r0, std::size_t r1, double* out) const;
  // Every value (rows x cols), e.g. for a device upload.
  std::vector<double> values() const;
  // Block scale i (row-major over rows x cols / scale_block), and all of them.
  double scale(std::size_t i) const {
    return scales.empty() ? scale_table[scale_codes[i]] : scales[i];
  }
  std::vector<double> scale_values() const;
};

// An fp32 matrix as an operand without a copy: element (r, k) is data[r row_stride + k
// col_stride] (a transpose is a view with the strides swapped). The caller keeps data alive.
Operand operand_view_f32(const float* data, std::size_t rows, std::size_t cols,
                         std::size_t row_stride, std::size_t col_stride);

// Reads an operand's block scales (`which`: "A" or "B") from a 2-d |u1 .npy of codes of `fmt`
// (e8m0fnu, or e4m3fn with the sign bit clear: UE4M3), shape rows x K / block, and attaches them.
// InputError names the file and what was expected (K not a multiple of the block, a shape that
// does not match, a signed UE4M3 code, a format that is not a scale format).
void read_block_scales(const std::string& path, const std::string& fmt, std::size_t block,
                       Operand& op, const char* which);

// Reads an operand's tile scales (`which`: "A" or "B") from a 2-d <f4 .npy of shape
// ceil(rows / R) x ceil(K / C) and attaches them. InputError names the file and what was expected.
void read_tile_scales(const std::string& path, std::size_t R, std::size_t C, Operand& op,
                      const char* which);
// Parses a tile "RxC" (1 <= R, C <= 2^20), naming `what` in the error.
void parse_tile(const std::string& text, const std::string& what, std::size_t& R, std::size_t& C);

// Decodes codes of `fmt` (8 or 16 bits) into an Operand; NaN codes decode to NaN, infinities to
// infinity.
Operand operand_from_codes(const std::vector<std::uint16_t>& codes, std::size_t rows,
                           std::size_t cols, const FloatFormat& fmt);
Operand operand_from_fp32(const std::vector<float>& x, std::size_t rows, std::size_t cols);

// Reads operand `which` ("A" or "B") from a 2-d .npy: codes of `fmt` (|u1 for at most 8 bits,
// <u2 above) or <f4 for fp32/tf32. InputError names the file and what was expected (rank,
// dtype, a code out of range, a format that is not a float of at most 16 bits).
Operand read_operand(const std::string& path, const std::string& fmt, const char* which);
// The operand of rows x cols C-order elements at `data` as read_operand makes it (also for arrays
// in memory, the Python binding's): `descr` is their NumPy type string (<f4 for fp32/tf32, |u1
// codes up to 8 bits, <u2 above), `what` names them in messages and `fmt_option` names the format
// argument; `keep` holds what owns `data` (may be null when the caller outlives the GEMM).
Operand operand_from_elements(const void* data, std::size_t rows, std::size_t cols,
                              const std::string& descr, const std::string& fmt,
                              const std::string& what, const std::string& fmt_option,
                              std::shared_ptr<const void> keep);

enum class OutFormat : std::uint8_t { fp32, bf16, fp16 };
OutFormat parse_out_format(const std::string& s);

// Per-row scales of A (one fp32 per row, M) and of B (one per row of B = column of C, N),
// applied to the fp32 accumulator after alpha, in the named fp32 order (SEMANTICS 15.1):
// a-first RN32(sb RN32(sa acc)), b-first RN32(sa RN32(sb acc)), product RN32(RN32(sa sb) acc).
// An empty vector means no scale on that side (1).
struct RowColScales {
  std::vector<float> a_rows, b_cols;
  // product: measured on an H100 for cuBLASLt's per-tensor FP8 scales and torch's row-wise
  // kernel (bench/results/2026-11-25-h100-gemm-scales.md).
  enum class Order : std::uint8_t { a_first, b_first, product } order = Order::product;
};
RowColScales::Order parse_scale_order(const std::string& s);
// InputError unless each non-empty side has M (rows of A) / N (rows of B) scales.
void check_scales(const RowColScales* scales, std::size_t M, std::size_t N);

// The output codes (fp32 bit patterns, or bf16/fp16 codes in the low 16 bits), M x N row-major.
// `alpha` (the product of per-tensor scales) multiplies the fp32 accumulator in the epilogue,
// RN32(alpha * acc), before the output conversion (not applied by `exact`, which scales the
// exact sum and rounds once). Non-exact models convert the fp32 accumulator to bf16/fp16 by
// round to nearest even.
std::vector<std::uint32_t> gemm(const Operand& a, const Operand& b, const AccumModel& m,
                                OutFormat out, double alpha = 1.0,
                                const RowColScales* scales = nullptr);

// gemm() a block of rows at a time: sink(i0, i1, codes) receives rows [i0, i1) of C ((i1 - i0)
// x N codes, row-major) in order, so that C need not be held whole. The operands are decoded a
// few rows at a time (the same values, in the same order of arithmetic, as gemm()).
using RowSink = std::function<void(std::size_t i0, std::size_t i1, const std::uint32_t* codes)>;
void gemm_rows(const Operand& a, const Operand& b, const AccumModel& m, OutFormat out, double alpha,
               const RowColScales* scales, const RowSink& sink);

// A model with `rp` and a 16-bit output (SEMANTICS 15.2): each output's fp32 accumulators of
// each chunk of m.chunk k under rp's per-chunk model (m with one accumulation over the chunk: no
// chunk, rp, shape lookup or library rule; fp32 out), each rounded to the output format and
// added in fp32 in order from +0 (native::dot_add_rounded_part), then alpha, the row/column
// scales and the output code. gemm_rows and the GPU emulation (gpu/gemm/gemm_emulation.cu) both
// compute it per output element; no block scales.
AccumModel rounded_part_model(const AccumModel& m);

// The checks every GEMM (CPU or CUDA) runs before it allocates: C's M x N (the operands are
// backed by their files) within what size_t addresses and this machine's memory holds (sim/common/
// checked_size.hpp), and, for a model that applies alpha in fp32 (all but exact), an alpha
// that stays a finite nonzero fp32 (1e300 would silently become inf). InputError naming them.
void check_gemm_problem(const Operand& a, const Operand& b, const AccumModel& m, double alpha,
                        OutFormat out);

// The model gemm() runs for these operands and output: model_for_shape with the operands' type
// (32-bit operands: tf32 if either is tf32, else the fp32 SGEMM) and the output's (the launch
// record of that GEMM), then block_scaled_model when they carry block scales. InputError: block
// scales on one side only or of different blocks, a sub-group model without block scales, or
// operands whose products could leave its integer range.
ShapeModel operand_model(const Operand& a, const Operand& b, const AccumModel& m, OutFormat out);

// The model's fp32 accumulator of one dot product (hw, fp32-seq, pairwise): exposed for tests
// and the probe. a and b hold K values each.
float dot_fp32(const double* a, const double* b, std::size_t k, int emin_a, int emin_b,
               const AccumModel& m);

}  // namespace exmy::gemm
