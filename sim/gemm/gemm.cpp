#include "sim/gemm/gemm.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "sim/common/checked_size.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/gemm_dot.hpp"
#include "sim/native/gemm_dot_sig.hpp"

namespace exmy::gemm {

Operand operand_from_codes(const std::vector<std::uint16_t>& codes, std::size_t rows,
                           std::size_t cols, const FloatFormat& fmt) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.code_bits = fmt.total_bits() <= 8 ? 8 : 16;
  o.value_bits = fmt.total_bits();
  const auto same = [&](const FloatFormat& f) {
    return f.exp_bits == fmt.exp_bits && f.man_bits == fmt.man_bits && f.bias == fmt.bias;
  };
  o.type = same(formats::bf16) ? "bf16" : same(formats::fp16) ? "fp16" : "other";
  o.emin = fmt.subnormals ? 1 - fmt.bias : -fmt.bias;
  o.v.resize(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) o.v[i] = native::to_double(fmt, codes[i]);
  return o;
}

Operand operand_from_fp32(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.code_bits = 32;
  o.emin = -126;
  o.v.assign(x.begin(), x.end());
  return o;
}

namespace {
template <class T>
T load(const void* data, std::size_t i) {
  T x;
  std::memcpy(&x, static_cast<const unsigned char*>(data) + i * sizeof(T), sizeof(T));
  return x;
}

// Rows [r0, r1) of a stored operand as doubles: fp32 values converted, codes through the table.
// A row-strided store (col_stride 1) is read row by row, a transposed view column by column, so
// that each pass reads its memory in order.
template <class T>
void decode_rows(const OperandStore& s, std::size_t cols, std::size_t r0, std::size_t r1,
                 double* out) {
  const auto value = [&](std::size_t idx) {
    if constexpr (sizeof(T) == 4) {
      return static_cast<double>(load<float>(s.data, idx));
    } else {
      return s.table[load<T>(s.data, idx)];
    }
  };
  if (s.col_stride == 1 || r1 - r0 == 1) {
    for (std::size_t r = r0; r < r1; ++r) {
      double* o = out + (r - r0) * cols;
      for (std::size_t k = 0; k < cols; ++k) o[k] = value(r * s.row_stride + k * s.col_stride);
    }
  } else {
    for (std::size_t k = 0; k < cols; ++k) {
      for (std::size_t r = r0; r < r1; ++r) {
        out[(r - r0) * cols + k] = value(r * s.row_stride + k * s.col_stride);
      }
    }
  }
}
}  // namespace

void Operand::rows_into(std::size_t r0, std::size_t r1, double* out) const {
  if (source) {
    source->rows_into(r0, r1, out);
    return;
  }
  if (!store) {
    std::copy(v.begin() + static_cast<std::ptrdiff_t>(r0 * cols),
              v.begin() + static_cast<std::ptrdiff_t>(r1 * cols), out);
    return;
  }
  switch (store->elem_bytes) {
    case 1:
      decode_rows<std::uint8_t>(*store, cols, r0, r1, out);
      break;
    case 2:
      decode_rows<std::uint16_t>(*store, cols, r0, r1, out);
      break;
    default:
      decode_rows<float>(*store, cols, r0, r1, out);
      break;
  }
}

std::vector<double> Operand::values() const {
  if (!store && !source) return v;
  std::vector<double> r(rows * cols);
  if (!r.empty()) rows_into(0, rows, r.data());
  return r;
}

std::vector<double> Operand::scale_values() const {
  if (!scales.empty()) return scales;
  std::vector<double> r(scale_codes.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = scale_table[scale_codes[i]];
  return r;
}

Operand operand_view_f32(const float* data, std::size_t rows, std::size_t cols,
                         std::size_t row_stride, std::size_t col_stride) {
  auto s = std::make_shared<OperandStore>();
  s->data = data;
  s->elem_bytes = 4;
  s->row_stride = row_stride;
  s->col_stride = col_stride;
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.store = std::move(s);
  return o;
}

Operand read_operand(const std::string& path, const std::string& fmt_name, const char* which) {
  // The file stays mapped and the operand reads it in place (OperandStore): its pages are the
  // input's own, not a copy.
  auto file = std::make_shared<const io::NpyMappedFile>(path);
  const io::NpyHeader& h = file->header();
  io::require_c_order(h, path);
  if (h.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(h.shape.size()) + "-d array (expected the 2-d " +
                     which + ", rows x K)");
  }
  const void* data = file->data();
  return operand_from_elements(data, h.shape[0], h.shape[1], h.descr, fmt_name, path,
                               std::string(which) == "A" ? "--a-format" : "--b-format",
                               std::move(file));
}

Operand operand_from_elements(const void* data, std::size_t rows, std::size_t cols,
                              const std::string& descr, const std::string& fmt_name,
                              const std::string& what, const std::string& fmt_option,
                              std::shared_ptr<const void> keep) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  auto store = std::make_shared<OperandStore>();
  store->data = data;
  store->row_stride = o.cols;
  store->col_stride = 1;
  store->keep = std::move(keep);
  if (fmt_name == "fp32" || fmt_name == "tf32") {
    if (descr != "<f4") {
      throw InputError(what + ": dtype " + descr + " (expected <f4 for " + fmt_name + ")");
    }
    o.code_bits = 32;
    o.emin = -126;
    o.type = fmt_name;  // fp32 (cuBLAS SGEMM on CUDA cores) or tf32 (tensor cores)
    store->elem_bytes = 4;
    o.store = std::move(store);
    return o;
  }
  const Format f = parse_format(fmt_name);
  if (f.kind != FormatKind::floating || f.fp.total_bits() > 16) {
    throw InputError(fmt_option + " '" + fmt_name +
                     "': expected a float format of at most 16 bits, fp32 or tf32");
  }
  const bool narrow = f.fp.total_bits() <= 8;
  const char* want = narrow ? io::kDescrU8 : io::kDescrU16;
  if (descr != want) {
    throw InputError(what + ": dtype '" + descr + "', expected '" + want + "'");
  }
  const std::size_t n = rows * cols;
  const std::uint64_t limit = std::uint64_t{1} << f.fp.total_bits();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t c = narrow ? load<std::uint8_t>(data, i) : load<std::uint16_t>(data, i);
    if (c >= limit) {
      throw InputError(what + ": code " + std::to_string(c) + " at index " + std::to_string(i) +
                       " (expected a " + fmt_name + " code below " + std::to_string(limit) + ")");
    }
  }
  // The values as operand_from_codes decodes them, one per code.
  const FloatFormat& fmt = f.fp;
  store->elem_bytes = narrow ? 1 : 2;
  store->table.resize(static_cast<std::size_t>(limit));
  for (std::uint64_t c = 0; c < limit; ++c) store->table[c] = native::to_double(fmt, c);
  const auto same = [&](const FloatFormat& g) {
    return g.exp_bits == fmt.exp_bits && g.man_bits == fmt.man_bits && g.bias == fmt.bias;
  };
  o.code_bits = narrow ? 8 : 16;
  o.value_bits = fmt.total_bits();
  o.emin = fmt.subnormals ? 1 - fmt.bias : -fmt.bias;
  // Formats other than bf16/fp16 keep their name (FP8: e4m3fn, e5m2 select cublas-sm90's
  // verified FP8 shapes).
  o.type = same(formats::bf16) ? "bf16" : same(formats::fp16) ? "fp16" : fmt_name;
  o.store = std::move(store);
  return o;
}

RowColScales::Order parse_scale_order(const std::string& s) {
  if (s == "a-first") return RowColScales::Order::a_first;
  if (s == "b-first") return RowColScales::Order::b_first;
  if (s == "product") return RowColScales::Order::product;
  throw InputError("--scale-order '" + s + "': expected a-first, b-first or product");
}

void check_scales(const RowColScales* scales, std::size_t M, std::size_t N) {
  if (scales == nullptr) return;
  const std::size_t r = scales->a_rows.size(), c = scales->b_cols.size();
  if ((r != 0 && r != M) || (c != 0 && c != N)) {
    throw InputError("row/column scales: " + std::to_string(r) + " and " + std::to_string(c) +
                     " (expected M = " + std::to_string(M) +
                     " rows of A and N = " + std::to_string(N) + " rows of B)");
  }
}

OutFormat parse_out_format(const std::string& s) {
  if (s == "fp32") return OutFormat::fp32;
  if (s == "bf16") return OutFormat::bf16;
  if (s == "fp16") return OutFormat::fp16;
  throw InputError("--out-format '" + s + "': expected fp32, bf16 or fp16");
}

void read_block_scales(const std::string& path, const std::string& fmt, std::size_t block,
                       Operand& op, const char* which) {
  const std::string opt = std::string("--block-scale-") + (which == std::string("A") ? "a" : "b");
  if (fmt != "e8m0fnu" && fmt != "e4m3fn") {
    throw InputError("--block-scale-format '" + fmt +
                     "': expected e8m0fnu (MX) or e4m3fn (NVFP4's unsigned UE4M3)");
  }
  if (block == 0) throw InputError("--block: expected a positive block size");
  if (op.cols % block != 0) {
    throw InputError(opt + ": K = " + std::to_string(op.cols) +
                     " is not a multiple of the block (" + std::to_string(block) + ")");
  }
  io::NpyArray s = io::read_npy(path);
  io::require_c_order(s, path);
  const std::size_t nb = op.cols / block;
  if (s.shape != std::vector<std::size_t>{op.rows, nb}) {
    std::string got;
    for (std::size_t d : s.shape) got += (got.empty() ? "" : " x ") + std::to_string(d);
    throw InputError(path + ": shape " + (got.empty() ? "()" : got) + " (expected " +
                     std::to_string(op.rows) + " x " + std::to_string(nb) + ": the rows of " +
                     which + " x K / " + std::to_string(block) + ")");
  }
  if (s.descr != io::kDescrU8) {
    throw InputError(path + ": dtype '" + s.descr + "', expected '" + io::kDescrU8 + "'");
  }
  // Kept as the file's codes (one byte per block), decoded through a 256-entry table.
  std::vector<std::uint8_t> codes = std::move(s.data);
  codes.resize(s.count());
  const FloatFormat f = parse_format(fmt).fp;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (fmt == "e4m3fn" && (codes[i] & 0x80u) != 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(codes[i]));
      throw InputError(path + ": element " + std::to_string(i) + " is " + hex +
                       " with the sign bit set (expected unsigned UE4M3 codes)");
    }
  }
  op.scales.clear();
  op.scale_table.resize(256);
  for (unsigned c = 0; c < 256; ++c) op.scale_table[c] = native::to_double(f, c);
  op.scale_codes = std::move(codes);
  op.scale_block = block;
  op.scale_emin = fmt == "e8m0fnu" ? -127 : 1 - f.bias;
}

void parse_tile(const std::string& text, const std::string& what, std::size_t& R, std::size_t& C) {
  const std::size_t x = text.find('x');
  if (x == std::string::npos) {
    throw InputError(what + " '" + text + "': expected RxC (e.g. 1x128, 128x128)");
  }
  R = static_cast<std::size_t>(number::parse_u64(text.substr(0, x), what + " rows", 1 << 20));
  C = static_cast<std::size_t>(number::parse_u64(text.substr(x + 1), what + " cols", 1 << 20));
  if (R == 0 || C == 0) throw InputError(what + " '" + text + "': tile sides must be positive");
}

void read_tile_scales(const std::string& path, std::size_t R, std::size_t C, Operand& op,
                      const char* which) {
  const io::NpyArray arr = io::read_npy(path);
  const std::size_t rb = (op.rows + R - 1) / R, kb = (op.cols + C - 1) / C;
  if (arr.shape != std::vector<std::size_t>{rb, kb}) {
    std::string got;
    for (std::size_t d : arr.shape) got += (got.empty() ? "" : " x ") + std::to_string(d);
    throw InputError(path + ": shape " + (got.empty() ? "()" : got) + " (expected " +
                     std::to_string(rb) + " x " + std::to_string(kb) + ": ceil(rows of " + which +
                     " / " + std::to_string(R) + ") x ceil(K / " + std::to_string(C) + "))");
  }
  if (arr.descr != "<f4") {
    throw InputError(path + ": dtype '" + arr.descr + "', expected '<f4' (fp32 tile scales)");
  }
  op.tile_scales = io::as_f32(arr, path);
  op.tile_rows = R;
  op.tile_cols = C;
}

namespace {
// Rows of an operand this many at a time keep a decoded block near 4 MiB of doubles.
std::size_t rows_per_block(std::size_t cols, std::size_t limit) {
  const std::size_t per = (std::size_t{1} << 19) / std::max<std::size_t>(cols, 1);
  return std::max<std::size_t>(1, std::min(per, std::max<std::size_t>(limit, 1)));
}

// The largest finite |value| of an operand, decoded a block of rows at a time.
double max_abs(const Operand& o) {
  double m = 0;
  const std::size_t step = rows_per_block(o.cols, o.rows);
  std::vector<double> buf;
  for (std::size_t r0 = 0; r0 < o.rows; r0 += step) {
    const std::size_t r1 = std::min(o.rows, r0 + step);
    buf.resize((r1 - r0) * o.cols);
    o.rows_into(r0, r1, buf.data());
    for (double x : buf) {
      if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    }
  }
  return m;
}
}  // namespace

namespace {
// The model of a GEMM with tile scales (SEMANTICS 15.7): cublas-sm90 becomes cuBLASLt's blockwise
// FP8 kernel as TransformerEngine's reference describes it (the e8m13 sum of every 128 k, then
// the promotion equation of the tile pair); promote=cublas / cutlass resolve to their equation
// for these tiles; a model without a chunk promotes once per k-block (chunk = C), which must be a
// multiple of the chunk.
ShapeModel tile_scaled_model(ShapeModel r, const AccumModel& m, const Operand& a,
                             const Operand& b) {
  using P = AccumModel::Promote;
  if (a.scale_block != 0 || b.scale_block != 0) {
    throw InputError("tile scales (fp32) and MX/NVFP4 block scales on the same GEMM");
  }
  AccumModel& x = r.model;
  if (m.library) {
    if (a.code_bits > 8 || b.code_bits > 8) {
      throw InputError("--accum " + m.name +
                       ": cuBLASLt's blockwise scaling is an FP8 GEMM (operands of at most "
                       "8 bits)");
    }
    // A verified launch record's rule (model_for_shape: the split-K parts of its kernel), else
    // the plain kernel's model, announced with what model_for_shape found.
    const bool recorded = r.measured && !r.spec.empty();
    x = parse_accum_model(recorded ? r.spec : "hw:k=32,frac=13,inter=13,chunk=128,promote=cublas",
                          8);
    x.name = m.name;
    x.library = true;
    x.gpu = m.gpu;
    if (!recorded) {
      r.measured = false;
      r.from = "blockwise fp32 scales (" + std::to_string(a.tile_rows) + "x" +
               std::to_string(a.tile_cols) + " . " + std::to_string(b.tile_rows) + "x" +
               std::to_string(b.tile_cols) +
               "): hw:k=32,frac=13,inter=13,chunk=128,promote=cublas (measured on an H200 at "
               "shapes where cuBLASLt runs no split-K, SEMANTICS 15.7; " +
               (r.from.empty() ? std::string("no launch record") : r.from) + ")";
    }
  }
  if (x.kind == AccumKind::exact) return r;
  const std::size_t kb = (a.cols + a.tile_cols - 1) / a.tile_cols;
  if (x.promote == P::unset || x.promote == P::cublas) {
    // Measured on an H200 (cuBLAS 13.1, bench/results/2026-12-01-h200-blockfp8-gemm.md): 1-D x
    // 1-D a-first, except with one k-block (K <= 128: cuBLASLt runs its outer-vector-scaled
    // kernel) b-first; a 2-D operand: product.
    x.promote =
        a.tile_rows == 1 && b.tile_rows == 1 ? (kb == 1 ? P::b_first : P::a_first) : P::product;
  } else if (x.promote == P::te) {
    x.promote = a.tile_rows == 1 ? P::a_first : b.tile_rows == 1 ? P::b_first : P::product;
  } else if (x.promote == P::cutlass) {
    x.promote = a.tile_rows < 128 && b.tile_rows < 128 ? P::a_first : P::product;
  }
  if (x.chunk == 0) x.chunk = static_cast<int>(a.tile_cols);
  if (a.tile_cols % static_cast<std::size_t>(x.chunk) != 0) {
    throw InputError("--accum " + m.name + ": the promotion chunk " + std::to_string(x.chunk) +
                     " must divide the tile scales' k extent " + std::to_string(a.tile_cols));
  }
  if (x.rp || x.sub_group > 0 || x.lanes > 1) {
    throw InputError("--accum " + m.name +
                     ": tile scales are applied per promotion chunk; rp, sub and lanes do not "
                     "combine with them");
  }
  // Split-K parts (each promoting from +0, then added in fp32) must be whole tiles of a
  // multiple of the chunk, so that no chunk straddles a k-block.
  if (x.split_k > 1 && (x.tile <= 0 || x.tile % x.chunk != 0)) {
    throw InputError("--accum " + m.name +
                     ": split-K with tile scales needs tile=T, a multiple "
                     "of the promotion chunk " +
                     std::to_string(x.chunk));
  }
  return r;
}
}  // namespace

ShapeModel operand_model(const Operand& a, const Operand& b, const AccumModel& m, OutFormat out) {
  // 32-bit operands: TF32 tensor cores if either is tf32, else the fp32 SGEMM (CUDA cores).
  const bool tf32 = a.type == "tf32" || b.type == "tf32";
  const char* out_name = out == OutFormat::fp32 ? "fp32" : out == OutFormat::bf16 ? "bf16" : "fp16";
  // Tile-scaled GEMMs look up launch records of their own (e4m3fn:PAIR, SEMANTICS 15.7).
  const std::string pair = std::to_string(a.tile_rows) + "x" + std::to_string(a.tile_cols) + "." +
                           std::to_string(b.tile_rows) + "x" + std::to_string(b.tile_cols);
  const std::string type = a.code_bits == 32                      ? (tf32 ? "tf32" : "fp32")
                           : a.tile_cols != 0 && a.type == b.type ? a.type + ":" + pair
                                                                  : a.type;
  ShapeModel r = model_for_shape(m, a.rows, b.rows, a.cols, type, out_name);
  if ((a.scale_block == 0) != (b.scale_block == 0) || a.scale_block != b.scale_block) {
    throw InputError("block scales: A's block " + std::to_string(a.scale_block) + ", B's " +
                     std::to_string(b.scale_block) +
                     " (expected both operands scaled, with the same block)");
  }
  if ((a.tile_cols == 0) != (b.tile_cols == 0) || a.tile_cols != b.tile_cols) {
    throw InputError("tile scales: A's tiles are " + std::to_string(a.tile_rows) + "x" +
                     std::to_string(a.tile_cols) + ", B's " + std::to_string(b.tile_rows) + "x" +
                     std::to_string(b.tile_cols) +
                     " (expected both operands scaled, with the same k extent C)");
  }
  if (a.tile_cols != 0) return tile_scaled_model(r, m, a, b);
  if (r.model.promote != AccumModel::Promote::unset && r.model.name != "deepgemm" &&
      r.model.name != "cutlass-sm90") {
    throw InputError("--accum " + m.name +
                     ": promote= applies tile scales; give them with "
                     "--block-scale-format fp32");
  }
  if (a.scale_block == 0) {
    if (r.model.sub_group > 0) {
      throw InputError("--accum " + m.name +
                       ": sub= sums sub-groups under block scales; give "
                       "--block-scale-a and --block-scale-b");
    }
    return r;
  }
  r.model = block_scaled_model(r.model, a.value_bits, b.value_bits);
  if (r.model.sub_group > 0) {
    // Exact sub-group sums are integers in units of 2^(emin_a + emin_b - 46): operands of at most
    // 8 bits keep them below 2^127 (FP8 e5m2: a 58-bit exponent span).
    if (a.code_bits > 8 || b.code_bits > 8) {
      throw InputError("--accum " + m.name +
                       ": sub-group sums (kind::mxf4) take operands of at "
                       "most 8 bits");
    }
    if (a.scale_block % static_cast<std::size_t>(r.model.sub_group) != 0) {
      throw InputError("--accum " + m.name + ": sub=" + std::to_string(r.model.sub_group) +
                       " must divide the scale block " + std::to_string(a.scale_block));
    }
    // A sub-group term is at most sub * max|a| max|b| * 4 (two scale significands < 2) units of
    // 2^(emax - frac): it must stay below 2^62 for the exact integer sum.
    const double terms = static_cast<double>(r.model.k_group / r.model.sub_group + 1);
    const double ma = max_abs(a), mb = max_abs(b);
    const double bound = terms * static_cast<double>(r.model.sub_group) * ma * mb * 4.0 *
                         std::ldexp(1.0, r.model.frac_bits);
    if (!(bound < std::ldexp(1.0, 62))) {
      throw InputError("--accum " + m.name + ": sub-group sums of these operands (max |a| " +
                       std::to_string(ma) + ", max |b| " + std::to_string(mb) +
                       ") leave the model's 62-bit range (it is MMA-Sim's FP4 form)");
    }
  }
  return r;
}

float dot_fp32(const double* a, const double* b, std::size_t k, int emin_a, int emin_b,
               const AccumModel& m) {
  return native::dot_model_fp32(a, 1, b, 1, k, emin_a, emin_b, dot_model(m));
}

namespace {
// rp (SEMANTICS 15.2): one chunk's fp32 output code (as an fp32 GEMM writes it) rounded to the
// 16-bit output format and added to the running fp32 sum (the GPU emulation's code too).
float add_rounded_part(float acc, std::uint32_t fp32_code, OutFormat out) {
  return native::dot_add_rounded_part(acc, fp32_code, static_cast<int>(out));
}

// The epilogue of output (i, j): alpha, then the row/column scales, then the output code.
std::uint32_t epilogue(float acc, double alpha, const RowColScales* scales, bool rows, bool cols,
                       std::size_t i, std::size_t j, OutFormat out) {
  if (alpha != 1.0) acc = native::rn_mul(native::rn_f32(alpha), acc);
  if (rows || cols) {
    acc = native::dot_rowcol(acc, rows ? scales->a_rows[i] : 1.0f, cols ? scales->b_cols[j] : 1.0f,
                             static_cast<int>(scales->order));
  }
  return native::dot_out_code(acc, 1.0f, static_cast<int>(out));
}
}  // namespace

AccumModel rounded_part_model(const AccumModel& m) {
  AccumModel part = m;
  part.chunk = 0;
  part.rp = false;
  part.by_shape = false;
  part.library = false;
  return part;
}

void check_gemm_problem(const Operand& a, const Operand& b, const AccumModel& m, double alpha,
                        OutFormat out) {
  if (a.cols != b.cols) {
    throw InputError("A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                     " and B is " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": expected the same K (C = A B^T)");
  }
  // C as 32-bit codes, and the output file's 2 or 4 bytes per element.
  checked_alloc_bytes({a.rows, b.rows}, sizeof(std::uint32_t),
                      "C = A B^T (M = A's rows, N = B's rows)");
  (void)out;
  if (m.kind != AccumKind::exact && alpha != 1.0) {
    const float f = native::rn_f32(alpha);
    if (!std::isfinite(f) || f == 0.0f) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", alpha);
      throw InputError(std::string("--scale-a x --scale-b = ") + buf +
                       ": the model applies alpha in fp32, where it would be " +
                       (f == 0.0f ? "0" : "inf") +
                       " (expected a product within fp32's range, about 1.2e-38 to 3.4e38)");
    }
  }
}

void gemm_rows(const Operand& a, const Operand& b, const AccumModel& model, OutFormat out,
               double alpha, const RowColScales* scales, const RowSink& sink) {
  check_gemm_problem(a, b, model, alpha, out);
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  check_scales(scales, M, N);
  const bool rows = scales != nullptr && !scales->a_rows.empty();
  const bool cols = scales != nullptr && !scales->b_cols.empty();
  const AccumModel m = operand_model(a, b, model, out).model;
  // rp with a 16-bit output (gemm.hpp, rounded_part_model): each output's chunks summed where it
  // is computed (the chunks' fp32 GEMMs element by element: the same dot products on the same k
  // ranges).
  const bool rp16 = m.rp && out != OutFormat::fp32;
  if (rp16 && (a.scale_block != 0 || b.scale_block != 0)) {
    throw InputError("--accum " + m.name + ": rp (16-bit split-K partials) with block scales");
  }
  const AccumModel part = rounded_part_model(m);
  const std::size_t P = static_cast<std::size_t>(m.chunk);
  if (rp16) (void)operand_model(a, b, part, OutFormat::fp32);  // the chunks' GEMMs check these
  // Blocks of rows of A and B decoded to doubles (TF32-truncated where the model truncates),
  // C a block of rows of A at a time: a few MiB in all besides the operands' stored form.
  const std::size_t TA = std::max<std::size_t>(
      1, std::min(rows_per_block(K, M), (std::size_t{1} << 20) / std::max<std::size_t>(N, 1)));
  const std::size_t TB = rows_per_block(K, N);
  const std::size_t nb = a.scale_block != 0 ? K / a.scale_block : 0;
  const bool tiled = a.tile_cols != 0;  // operand_model checked both sides
  const std::size_t kb = tiled ? (K + a.tile_cols - 1) / a.tile_cols : 0;
  std::vector<double> ab(std::min(TA, M) * K), bb(std::min(TB, N) * K);
  std::vector<double> as(std::min(TA, M) * nb), bs(std::min(TB, N) * nb);
  std::vector<std::uint32_t> c(std::min(TA, M) * N);
  const bool tf32 = m.truncate_tf32;
  const int mode = static_cast<int>(m.tf32_round);
  const auto decode = [&](const Operand& o, std::size_t r0, std::size_t r1, double* vals,
                          double* scl) {
    o.rows_into(r0, r1, vals);
    if (tf32 && o.code_bits == 32) {
      for (std::size_t t = 0; t < (r1 - r0) * K; ++t) {
        vals[t] = native::dot_tf32(static_cast<float>(vals[t]), mode);
      }
    }
    for (std::size_t t = 0; t < (r1 - r0) * nb; ++t) scl[t] = o.scale(r0 * nb + t);
  };
  const native::DotModel dm = dot_model(m), dpart = dot_model(part);
  // exact: the sum in MPFR (precision covers every fp32 x fp32 product exactly and the whole
  // exponent span), scaled by alpha, rounded once to the output format (RNE).
  const bool exact = m.kind == AccumKind::exact;
  const Format of = parse_format(out == OutFormat::fp32   ? "fp32"
                                 : out == OutFormat::bf16 ? "bf16"
                                                          : "fp16");
  mpfr_t acc, p;
  mpfr_init2(acc, 1200);
  mpfr_init2(p, 1200);
  struct Clear {
    mpfr_t &x, &y;
    ~Clear() {
      mpfr_clear(x);
      mpfr_clear(y);
    }
  } clear{acc, p};
  // The hw model without block or tile scales takes each decoded element apart once
  // (gemm_dot_sig.hpp) rather than once per product; rows with a NaN or infinity keep
  // dot_model_fp32, whose special-value rules the fast path leaves out.
  const bool sig = !exact && !rp16 && nb == 0 && !tiled && native::dot_sig_applies(dm);
  native::DotSigBlock asig, bsig;
  // B in one block (N <= TB): decoded once, not once per block of A (the same values).
  const bool b_once = N <= TB;
  if (b_once && N > 0) {
    decode(b, 0, N, bb.data(), bs.data());
    if (sig) bsig.assign(bb.data(), N, K, b.emin);
  }
  for (std::size_t i0 = 0; i0 < M; i0 += TA) {
    const std::size_t i1 = std::min(M, i0 + TA);
    decode(a, i0, i1, ab.data(), as.data());
    if (sig) asig.assign(ab.data(), i1 - i0, K, a.emin);
    for (std::size_t j0 = 0; j0 < N; j0 += TB) {
      const std::size_t j1 = std::min(N, j0 + TB);
      if (!b_once) {
        decode(b, j0, j1, bb.data(), bs.data());
        if (sig) bsig.assign(bb.data(), j1 - j0, K, b.emin);
      }
      if (sig) {
        for (std::size_t i = i0; i < i1; ++i) {
          const native::DotSigRow ar = asig.row(i - i0);
          const bool af = asig.finite[i - i0] != 0;
          for (std::size_t j = j0; j < j1; ++j) {
            const float v =
                af && bsig.finite[j - j0] != 0
                    ? native::dot_model_fp32_sig(ar, bsig.row(j - j0), K, dm)
                    : native::dot_model_fp32(ab.data() + (i - i0) * K, 1, bb.data() + (j - j0) * K,
                                             1, K, a.emin, b.emin, dm);
            c[(i - i0) * N + j] = epilogue(v, alpha, scales, rows, cols, i, j, out);
          }
        }
        continue;
      }
      for (std::size_t i = i0; i < i1; ++i) {
        const double* ar = ab.data() + (i - i0) * K;
        const double* asr = as.data() + (i - i0) * nb;
        for (std::size_t j = j0; j < j1; ++j) {
          const double* br = bb.data() + (j - j0) * K;
          const double* bsr = bs.data() + (j - j0) * nb;
          std::uint32_t& code = c[(i - i0) * N + j];
          if (exact) {
            mpfr_set_zero(acc, 1);
            for (std::size_t k = 0; k < K; ++k) {
              mpfr_set_d(p, ar[k], MPFR_RNDN);
              mpfr_mul_d(p, p, br[k], MPFR_RNDN);  // exact at 1200 bits
              if (nb != 0) {                       // the block scales (exact too)
                const std::size_t blk = k / a.scale_block;
                mpfr_mul_d(p, p, asr[blk], MPFR_RNDN);
                mpfr_mul_d(p, p, bsr[blk], MPFR_RNDN);
              }
              if (tiled) {  // the tile scales (fp32 values: exact too)
                mpfr_mul_d(p, p, a.tile_scale(i, k / a.tile_cols), MPFR_RNDN);
                mpfr_mul_d(p, p, b.tile_scale(j, k / b.tile_cols), MPFR_RNDN);
              }
              mpfr_add(acc, acc, p, MPFR_RNDN);  // exact: the span fits
            }
            mpfr_mul_d(acc, acc, alpha, MPFR_RNDN);  // exact at 1200 bits, as are the scales
            if (rows) mpfr_mul_d(acc, acc, scales->a_rows[i], MPFR_RNDN);
            if (cols) mpfr_mul_d(acc, acc, scales->b_cols[j], MPFR_RNDN);
            code = static_cast<std::uint32_t>(of.encode(acc, Rounding{}).code);
            continue;
          }
          float v;
          if (rp16) {
            v = 0.0f;
            for (std::size_t k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += P) {
              const std::size_t k1 = std::min(K, k0 + P);
              const float part_acc =
                  native::dot_model_fp32(ar + k0, 1, br + k0, 1, k1 - k0, a.emin, b.emin, dpart);
              v = add_rounded_part(v, native::dot_out_code(part_acc, 1.0f, 0), out);
              if (K == 0) break;
            }
          } else {
            native::DotBlockScales sc;
            if (nb != 0) {
              sc.a = asr;
              sc.b = bsr;
              sc.block = static_cast<int>(a.scale_block);
              sc.emin_a = a.scale_emin;
              sc.emin_b = b.scale_emin;
            }
            native::DotTileScales ts;
            if (tiled) {
              ts.a = a.tile_scales.data() + (i / a.tile_rows) * kb;
              ts.b = b.tile_scales.data() + (j / b.tile_rows) * kb;
              ts.block = static_cast<int>(a.tile_cols);
            }
            v = native::dot_model_fp32(ar, 1, br, 1, K, a.emin, b.emin, dm, nb != 0 ? &sc : nullptr,
                                       tiled ? &ts : nullptr);
          }
          code = epilogue(v, alpha, scales, rows, cols, i, j, out);
        }
      }
    }
    sink(i0, i1, c.data());
  }
}

std::vector<std::uint32_t> gemm(const Operand& a, const Operand& b, const AccumModel& model,
                                OutFormat out, double alpha, const RowColScales* scales) {
  check_gemm_problem(a, b, model, alpha, out);
  std::vector<std::uint32_t> c(a.rows * b.rows);
  const std::size_t N = b.rows;
  gemm_rows(a, b, model, out, alpha, scales,
            [&](std::size_t i0, std::size_t i1, const std::uint32_t* codes) {
              std::copy(codes, codes + (i1 - i0) * N,
                        c.begin() + static_cast<std::ptrdiff_t>(i0 * N));
            });
  return c;
}

}  // namespace exmy::gemm
