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
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/gemm_dot.hpp"

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
// An fp32/tf32 operand straight from the mapped file to its doubles, 16 MiB at a time, each
// chunk's pages dropped once converted: resident memory stays near the doubles themselves
// (reading the array, copying it to floats and then to doubles held four times the file).
Operand read_fp32_operand(const std::string& path, const std::string& fmt_name, const char* which) {
  const io::NpyMappedFile f(path);
  const io::NpyHeader& h = f.header();
  io::require_c_order(h, path);
  if (h.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(h.shape.size()) + "-d array (expected the 2-d " +
                     which + ", rows x K)");
  }
  if (h.descr != "<f4") {
    throw InputError(path + ": dtype " + h.descr + " (expected <f4 for " + fmt_name + ")");
  }
  Operand o;
  o.rows = h.shape[0];
  o.cols = h.shape[1];
  o.code_bits = 32;
  o.emin = -126;
  o.type = fmt_name;  // fp32 (cuBLAS SGEMM on CUDA cores) or tf32 (tensor cores)
  const std::size_t n = h.count();
  check_allocation(n * sizeof(double), path + ": operand " + which + " as doubles");
  // reserve, not resize: the doubles' pages are touched as they are filled, while the file's
  // are dropped behind them.
  o.v.reserve(n);
  constexpr std::size_t kChunk = std::size_t{1} << 22;  // elements (16 MiB of fp32)
  for (std::size_t i0 = 0; i0 < n; i0 += kChunk) {
    const std::size_t i1 = std::min(n, i0 + kChunk);
    for (std::size_t i = i0; i < i1; ++i) {
      float x;
      std::memcpy(&x, f.data() + i * 4, 4);
      o.v.push_back(x);
    }
    f.release_before(i1 * 4);
  }
  return o;
}
}  // namespace

Operand read_operand(const std::string& path, const std::string& fmt_name, const char* which) {
  if (fmt_name == "fp32" || fmt_name == "tf32") return read_fp32_operand(path, fmt_name, which);
  const io::NpyArray a = io::read_npy(path);
  io::require_c_order(a, path);
  if (a.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(a.shape.size()) + "-d array (expected the 2-d " +
                     which + ", rows x K)");
  }
  const std::size_t rows = a.shape[0], cols = a.shape[1];
  if (fmt_name == "fp32" || fmt_name == "tf32") {
    if (a.descr != "<f4") {
      throw InputError(path + ": dtype " + a.descr + " (expected <f4 for " + fmt_name + ")");
    }
    Operand o = operand_from_fp32(io::as_f32(a, path), rows, cols);
    o.type = fmt_name;  // fp32 (cuBLAS SGEMM on CUDA cores) or tf32 (tensor cores)
    return o;
  }
  const Format f = parse_format(fmt_name);
  if (f.kind != FormatKind::floating || f.fp.total_bits() > 16) {
    throw InputError(std::string(which == std::string("A") ? "--a-format" : "--b-format") + " '" +
                     fmt_name + "': expected a float format of at most 16 bits, fp32 or tf32");
  }
  std::vector<std::uint16_t> codes;
  if (f.fp.total_bits() <= 8) {
    const auto u = io::as_u8(a, path);
    codes.assign(u.begin(), u.end());
  } else {
    codes = io::as_u16(a, path);
  }
  const std::uint64_t limit = std::uint64_t{1} << f.fp.total_bits();
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] >= limit) {
      throw InputError(path + ": code " + std::to_string(codes[i]) + " at index " +
                       std::to_string(i) + " (expected a " + fmt_name + " code below " +
                       std::to_string(limit) + ")");
    }
  }
  Operand o = operand_from_codes(codes, rows, cols, f.fp);
  // Formats other than bf16/fp16 keep their name (FP8: e4m3fn, e5m2 select cublas-sm90's
  // verified FP8 shapes).
  if (o.type == "other") o.type = fmt_name;
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
  const io::NpyArray s = io::read_npy(path);
  io::require_c_order(s, path);
  const std::size_t nb = op.cols / block;
  if (s.shape != std::vector<std::size_t>{op.rows, nb}) {
    std::string got;
    for (std::size_t d : s.shape) got += (got.empty() ? "" : " x ") + std::to_string(d);
    throw InputError(path + ": shape " + (got.empty() ? "()" : got) + " (expected " +
                     std::to_string(op.rows) + " x " + std::to_string(nb) + ": the rows of " +
                     which + " x K / " + std::to_string(block) + ")");
  }
  const std::vector<std::uint8_t> codes = io::as_u8(s, path);
  const FloatFormat f = parse_format(fmt).fp;
  op.scales.resize(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (fmt == "e4m3fn" && (codes[i] & 0x80u) != 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(codes[i]));
      throw InputError(path + ": element " + std::to_string(i) + " is " + hex +
                       " with the sign bit set (expected unsigned UE4M3 codes)");
    }
    op.scales[i] = native::to_double(f, codes[i]);
  }
  op.scale_block = block;
  op.scale_emin = fmt == "e8m0fnu" ? -127 : 1 - f.bias;
}

native::DotBlockScales block_scales_of(const Operand& a, const Operand& b, std::size_t i,
                                       std::size_t j) {
  native::DotBlockScales s;
  if (a.scale_block == 0) return s;
  const std::size_t nb = a.cols / a.scale_block;
  s.a = a.scales.data() + i * nb;
  s.b = b.scales.data() + j * nb;
  s.block = static_cast<int>(a.scale_block);
  s.emin_a = a.scale_emin;
  s.emin_b = b.scale_emin;
  return s;
}

namespace {
double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) {
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  }
  return m;
}
}  // namespace

ShapeModel operand_model(const Operand& a, const Operand& b, const AccumModel& m, OutFormat out) {
  // 32-bit operands: TF32 tensor cores if either is tf32, else the fp32 SGEMM (CUDA cores).
  const bool tf32 = a.type == "tf32" || b.type == "tf32";
  const char* out_name = out == OutFormat::fp32 ? "fp32" : out == OutFormat::bf16 ? "bf16" : "fp16";
  ShapeModel r = model_for_shape(m, a.rows, b.rows, a.cols,
                                 a.code_bits == 32 ? (tf32 ? "tf32" : "fp32") : a.type, out_name);
  if ((a.scale_block == 0) != (b.scale_block == 0) || a.scale_block != b.scale_block) {
    throw InputError("block scales: A's block " + std::to_string(a.scale_block) + ", B's " +
                     std::to_string(b.scale_block) +
                     " (expected both operands scaled, with the same block)");
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
    const double bound = terms * static_cast<double>(r.model.sub_group) * max_abs(a.v) *
                         max_abs(b.v) * 4.0 * std::ldexp(1.0, r.model.frac_bits);
    if (!(bound < std::ldexp(1.0, 62))) {
      throw InputError("--accum " + m.name + ": sub-group sums of these operands (max |a| " +
                       std::to_string(max_abs(a.v)) + ", max |b| " + std::to_string(max_abs(b.v)) +
                       ") leave the model's 62-bit range (it is MMA-Sim's FP4 form)");
    }
  }
  return r;
}

float dot_fp32(const double* a, const double* b, std::size_t k, int emin_a, int emin_b,
               const AccumModel& m) {
  return native::dot_model_fp32(a, 1, b, 1, k, emin_a, emin_b, dot_model(m));
}

std::vector<std::uint32_t> gemm_rounded_parts(const Operand& a, const Operand& b,
                                              const AccumModel& m, OutFormat out, double alpha,
                                              const RowColScales* scales, Fp32Gemm fp32_gemm) {
  if (a.scale_block != 0 || b.scale_block != 0) {
    throw InputError("--accum " + m.name + ": rp (16-bit split-K partials) with block scales");
  }
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  check_scales(scales, M, N);
  AccumModel part = m;  // each chunk: one accumulation, fp32 out
  part.chunk = 0;
  part.rp = false;
  part.by_shape = false;
  part.library = false;
  const std::size_t P = static_cast<std::size_t>(m.chunk);
  const FloatFormat of = out == OutFormat::bf16 ? formats::bf16 : formats::fp16;
  std::vector<float> acc(M * N, 0.0f);
  auto slice = [](const Operand& o, std::size_t k0, std::size_t k1) {
    Operand s = o;
    s.cols = k1 - k0;
    s.v.assign(s.rows * s.cols, 0.0);
    for (std::size_t r = 0; r < o.rows; ++r) {
      std::copy(o.v.begin() + static_cast<std::ptrdiff_t>(r * o.cols + k0),
                o.v.begin() + static_cast<std::ptrdiff_t>(r * o.cols + k1),
                s.v.begin() + static_cast<std::ptrdiff_t>(r * s.cols));
    }
    return s;
  };
  for (std::size_t k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += P) {
    const std::size_t k1 = std::min(K, k0 + P);
    const std::vector<std::uint32_t> c = fp32_gemm(slice(a, k0, k1), slice(b, k0, k1), part);
    for (std::size_t i = 0; i < M * N; ++i) {
      const std::uint32_t code =
          native::dot_out_code(native::f32_from_bits(c[i]), 1.0f, static_cast<int>(out));
      acc[i] = native::rn_add(acc[i], static_cast<float>(native::to_double(of, code)));
    }
    if (K == 0) break;
  }
  const bool rows = scales != nullptr && !scales->a_rows.empty();
  const bool cols = scales != nullptr && !scales->b_cols.empty();
  std::vector<std::uint32_t> c(M * N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float v = acc[i * N + j];
      if (alpha != 1.0) v = native::rn_mul(native::rn_f32(alpha), v);
      if (rows || cols) {
        v = native::dot_rowcol(v, rows ? scales->a_rows[i] : 1.0f, cols ? scales->b_cols[j] : 1.0f,
                               static_cast<int>(scales->order));
      }
      c[i * N + j] = native::dot_out_code(v, 1.0f, static_cast<int>(out));
    }
  }
  return c;
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

std::vector<std::uint32_t> gemm(const Operand& a, const Operand& b, const AccumModel& model,
                                OutFormat out, double alpha, const RowColScales* scales) {
  check_gemm_problem(a, b, model, alpha, out);
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  check_scales(scales, M, N);
  const bool rows = scales != nullptr && !scales->a_rows.empty();
  const bool cols = scales != nullptr && !scales->b_cols.empty();
  const AccumModel m = operand_model(a, b, model, out).model;
  if (m.rp && out != OutFormat::fp32) {
    return gemm_rounded_parts(a, b, m, out, alpha, scales,
                              [](const Operand& x, const Operand& y, const AccumModel& mm) {
                                return gemm(x, y, mm, OutFormat::fp32);
                              });
  }
  // The operands as the model reads them: TF32-truncated copies only where the model truncates
  // (a copy of both operands' doubles otherwise doubled the peak memory for nothing).
  std::vector<double> a_tf32, b_tf32;
  if (m.truncate_tf32) {
    const int mode = static_cast<int>(m.tf32_round);
    if (a.code_bits == 32) {
      a_tf32 = a.v;
      for (auto& x : a_tf32) x = native::dot_tf32(static_cast<float>(x), mode);
    }
    if (b.code_bits == 32) {
      b_tf32 = b.v;
      for (auto& x : b_tf32) x = native::dot_tf32(static_cast<float>(x), mode);
    }
  }
  const std::vector<double>& av = a_tf32.empty() ? a.v : a_tf32;
  const std::vector<double>& bv = b_tf32.empty() ? b.v : b_tf32;
  std::vector<std::uint32_t> c(M * N);
  if (m.kind == AccumKind::exact) {
    // The exact sum in MPFR (precision covers every fp32 x fp32 product exactly and the whole
    // exponent span), scaled by alpha, rounded once to the output format (RNE).
    const Format of = parse_format(out == OutFormat::fp32   ? "fp32"
                                   : out == OutFormat::bf16 ? "bf16"
                                                            : "fp16");
    mpfr_t acc, p;
    mpfr_init2(acc, 1200);
    mpfr_init2(p, 1200);
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        mpfr_set_zero(acc, 1);
        for (std::size_t k = 0; k < K; ++k) {
          mpfr_set_d(p, av[i * K + k], MPFR_RNDN);
          mpfr_mul_d(p, p, bv[j * K + k], MPFR_RNDN);  // exact at 1200 bits
          if (a.scale_block != 0) {                    // the block scales (exact too)
            const std::size_t nb = K / a.scale_block, blk = k / a.scale_block;
            mpfr_mul_d(p, p, a.scales[i * nb + blk], MPFR_RNDN);
            mpfr_mul_d(p, p, b.scales[j * nb + blk], MPFR_RNDN);
          }
          mpfr_add(acc, acc, p, MPFR_RNDN);  // exact: the span fits
        }
        mpfr_mul_d(acc, acc, alpha, MPFR_RNDN);  // exact at 1200 bits, as are the scales
        if (rows) mpfr_mul_d(acc, acc, scales->a_rows[i], MPFR_RNDN);
        if (cols) mpfr_mul_d(acc, acc, scales->b_cols[j], MPFR_RNDN);
        c[i * N + j] = static_cast<std::uint32_t>(of.encode(acc, Rounding{}).code);
      }
    }
    mpfr_clear(acc);
    mpfr_clear(p);
    return c;
  }
  const native::DotModel dm = dot_model(m);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      const native::DotBlockScales bs = block_scales_of(a, b, i, j);
      float acc = native::dot_model_fp32(&av[i * K], 1, &bv[j * K], 1, K, a.emin, b.emin, dm,
                                         bs.a != nullptr ? &bs : nullptr);
      if (alpha != 1.0) acc = native::rn_mul(native::rn_f32(alpha), acc);
      if (rows || cols) {
        acc = native::dot_rowcol(acc, rows ? scales->a_rows[i] : 1.0f,
                                 cols ? scales->b_cols[j] : 1.0f, static_cast<int>(scales->order));
      }
      c[i * N + j] = native::dot_out_code(acc, 1.0f, static_cast<int>(out));
    }
  }
  return c;
}

}  // namespace exmy::gemm
