// exmy gemm --b-format nf4|fp4 --compat bnb-cuda: bitsandbytes' QLoRA matmul,
// bnb.matmul_4bit(X, W.t(), quant_state, bias) (docs/SEMANTICS.md 7.17). X is any rank with K
// last (bf16 as <u2 bits, fp16 <f2, fp32 <f4); W the packed codes quantize_4bit wrote (|u1, any
// shape, ⌈N K / 2⌉ bytes) with its state (7.14.5); Y is X's shape with K replaced by N, in X's
// dtype. The path (SIMT kernel, or dequantize + linear through exmy's GEMM model) is
// bitsandbytes' own choice for the GPU named by --sms / --sm (default: an H100 SXM / H200), or
// the one --path forces (the MMA kernel through exmy's tensor-core model, --mma-accum). Every input
// is checked before anything is written; exit 2 names the bad input.
#include "cli/cmd_gemm_bnb4.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/options.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/specialize/platform.hpp"
#include "sim/quant/bnb4_matmul.hpp"

namespace exmy::cli {
namespace {

using native::Bnb4Dtype;

struct Bnb4GemmArgs {
  std::string a_path, b_path, out, a_fmt, b_fmt, out_fmt, compat, b_shape, absmax_path;
  std::string state2_path, offset_path, bias_path, path = "auto", accum = "cublas-sm90", mma_accum;
  std::size_t block = 64;
  bool double_quant = false, json = false, plan = false;
  Device device = Device::cpu;
  quant::Bnb4Gpu gpu;
};

Bnb4Dtype parse_dtype(const std::string& v, const char* opt) {
  if (v == "bf16") return Bnb4Dtype::bf16;
  if (v == "fp16") return Bnb4Dtype::fp16;
  if (v == "fp32") return Bnb4Dtype::fp32;
  throw InputError(std::string(opt) + " '" + v +
                   "': bitsandbytes' 4-bit matmul takes bf16, fp16 or fp32");
}

const char* descr_of(Bnb4Dtype d) {
  return d == Bnb4Dtype::fp32 ? "<f4" : d == Bnb4Dtype::fp16 ? "<f2" : "<u2";
}

// An array of dtype d (bf16 as <u2 bits): its shape and its codes widened to 32 bits.
std::vector<std::uint32_t> read_codes(const std::string& path, Bnb4Dtype d, const char* opt,
                                      std::vector<std::size_t>& shape) {
  const io::NpyArray a = io::read_npy(path);
  io::require_c_order(a, path);
  if (a.descr != descr_of(d)) {
    throw InputError(std::string(opt) + " " + path + ": dtype " + a.descr + ", expected " +
                     descr_of(d) + (d == Bnb4Dtype::bf16 ? " (bf16 bit patterns)" : ""));
  }
  shape = a.shape;
  const std::size_t n = a.count();
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (d == Bnb4Dtype::fp32) {
      v[i] = static_cast<std::uint32_t>(a.data[4 * i]) | (std::uint32_t{a.data[4 * i + 1]} << 8) |
             (std::uint32_t{a.data[4 * i + 2]} << 16) | (std::uint32_t{a.data[4 * i + 3]} << 24);
    } else {
      v[i] = static_cast<std::uint32_t>(a.data[2 * i]) | (std::uint32_t{a.data[2 * i + 1]} << 8);
    }
  }
  return v;
}

// "NxK" (also "N,K").
void parse_nk(const std::string& v, std::size_t& N, std::size_t& K) {
  const std::size_t at = v.find_first_of("x,");
  if (at == std::string::npos) throw InputError("--b-shape '" + v + "': expected NxK");
  N = static_cast<std::size_t>(number::parse_u64(v.substr(0, at), "--b-shape N", 1ull << 31));
  K = static_cast<std::size_t>(number::parse_u64(v.substr(at + 1), "--b-shape K", 1ull << 31));
  if (N == 0 || K == 0) throw InputError("--b-shape '" + v + "': N and K must be positive");
}

Options bnb4_gemm_options(Bnb4GemmArgs& g) {
  Options opts(
      "exmy gemm --a X.npy --a-format bf16|fp16|fp32 --b WQ.npy --b-format nf4|fp4 --b-shape NxK "
      "--block-scale-b ABSMAX.npy --block B [--double-quant --state2 S2.npy --offset O.npy] "
      "--compat bnb-cuda --out-format F --out Y.npy [OPTIONS]",
      "bitsandbytes' matmul_4bit (QLoRA): Y = X W^T (+ bias) with W the N x K weight quantized "
      "by quantize_4bit (docs/SEMANTICS.md 7.17).",
      "exmy gemm --a x.npy --a-format bf16 --b wq.npy --b-format nf4 --b-shape 4096x4096 "
      "--block-scale-b absmax.npy --block 64 --compat bnb-cuda --out-format bf16 --out y.npy");
  opts.value({"--a"}, "X.npy", "activations, K last (M = elements / K)", Options::kRequired,
             [&](const std::string& v) { g.a_path = v; })
      .value({"--a-format"}, "bf16|fp16|fp32", "X's dtype (bf16 as <u2 bits)", Options::kRequired,
             [&](const std::string& v) { g.a_fmt = v; })
      .value({"--b"}, "WQ.npy", "the packed 4-bit codes (|u1, as quantize_4bit returns them)",
             Options::kRequired, [&](const std::string& v) { g.b_path = v; })
      .value({"--b-format"}, "nf4|fp4", "the 4-bit type", Options::kRequired,
             [&](const std::string& v) { g.b_fmt = v; })
      .value({"--b-shape"}, "NxK", "the weight's shape (quant_state.shape: out x in features)",
             Options::kRequired, [&](const std::string& v) { g.b_shape = v; })
      .value({"--block-scale-b"}, "ABSMAX.npy",
             "quant_state.absmax: <f4, or |u1 codes with --double-quant", Options::kRequired,
             [&](const std::string& v) { g.absmax_path = v; })
      .value({"--block"}, "B", "quant_state.blocksize (32, 64, ..., 4096)", "64",
             [&](const std::string& v) {
               g.block = static_cast<std::size_t>(number::parse_u64(v, "--block", 4096));
             })
      .flag({"--double-quant"}, "compress_statistics=True (needs --state2 and --offset)",
            [&] { g.double_quant = true; })
      .value({"--state2"}, "S2.npy", "quant_state.state2.absmax (<f4)", "none",
             [&](const std::string& v) { g.state2_path = v; })
      .value({"--offset"}, "O.npy", "quant_state.offset (<f4, one value)", "none",
             [&](const std::string& v) { g.offset_path = v; })
      .value({"--bias"}, "BIAS.npy", "the bias, N values of X's dtype", "none",
             [&](const std::string& v) { g.bias_path = v; })
      .value({"--compat"}, "bnb-cuda", "the library profile (required)", Options::kRequired,
             [&](const std::string& v) { g.compat = v; })
      .value({"--out-format"}, "F", "Y's dtype: X's (matmul_4bit returns X's dtype)",
             Options::kRequired, [&](const std::string& v) { g.out_fmt = v; })
      .value({"--out"}, "Y.npy", "the product", Options::kRequired,
             [&](const std::string& v) { g.out = v; })
      .value({"--mma-accum"}, "MODEL", "the tensor-core model of the MMA kernel's mma.sync chain",
             "sm90 (sm80 below sm_90)", [&](const std::string& v) { g.mma_accum = v; })
      .value({"--path"}, "auto|simt|mma|dequant-linear|gemv",
             "auto: bitsandbytes' dispatch for --sms/--sm; or force one path", g.path,
             [&](const std::string& v) { g.path = v; })
      .value({"--sms"}, "N", "the GPU's SM count (the dispatch reads it)", "132",
             [&](const std::string& v) {
               g.gpu.sms = static_cast<int>(number::parse_u64(v, "--sms", 1024));
             })
      .value({"--sm"}, "MAJMIN", "the GPU's compute capability, e.g. 90 (H100/H200), 80", "90",
             [&](const std::string& v) {
               const auto cc = number::parse_u64(v, "--sm", 199);
               g.gpu.cc_major = static_cast<int>(cc / 10);
               g.gpu.cc_minor = static_cast<int>(cc % 10);
             })
      .value({"--accum"}, "MODEL", "the GEMM model of the dequantize + linear path (cuBLAS)",
             g.accum, [&](const std::string& v) { g.accum = v; })
      .value({"--device"}, "cpu|cuda",
             "where the GEMM of the mma and dequant-linear paths runs (cuda: exmy's emulation "
             "kernel, the same bits)",
             "cpu", [&](const std::string& v) { g.device = parse_device(v); })
      .flag({"--json"},
            "print the path taken as JSON (dequant-linear: also the GEMM model applied, "
            "\"accum_model\", and whether the shape is verified)",
            [&] { g.json = true; })
      .flag({"--plan"},
            "check the inputs, print --json's line (path; dequant-linear: the GEMM model of this "
            "M x N x K with its launch record) and write nothing",
            [&] { g.plan = true; });
  return opts;
}

// gemm::gemm on the CPU, or its CUDA emulation (gpu/gemm/: the same bits).
std::vector<std::uint32_t> run_model(const gemm::Operand& A, const gemm::Operand& B,
                                     const gemm::AccumModel& m, gemm::OutFormat of, Device dev) {
  return dev == Device::cuda ? gpu::gemm_emulate(A, B, m, of) : gemm::gemm(A, B, m, of);
}

// The GEMM of F.linear(X, W_dq, bias) (bitsandbytes' _dequant_linear_fallback, backends/cuda/
// ops.py): y = X W_dq^T, which torch runs as torch.mm(X, W_dq.t()) — cuBLAS's TN GEMM of M x K
// by N x K, the layout and (M, N, K) of the launch records (tools/gemm_launch.py) — or, with a
// bias, as addmm with cuBLASLt's bias epilogue, whose kernels are others: the records
// "T>T+bias" (bench/peers/qlora_linear_launch_capture.py). The model exmy applies there (the
// record's family rule, or the rule for a shape without a record, announced; SEMANTICS 15.6).
gemm::ShapeModel linear_model(std::size_t M, const quant::Bnb4Weight& w, Bnb4Dtype dt,
                              bool has_bias, const std::string& accum) {
  const bool f32 = dt == Bnb4Dtype::fp32;
  const std::string type = f32 ? "fp32" : dt == Bnb4Dtype::bf16 ? "bf16" : "fp16";
  const gemm::AccumModel m = gemm::parse_accum_model(accum, f32 ? 32 : 16);
  gemm::ShapeModel sm =
      gemm::model_for_shape(m, M, w.N, w.K, type, has_bias ? type + "+bias" : type);
  if (has_bias && sm.measured && gemm::parse_accum_model(sm.spec, f32 ? 32 : 16).rp) {
    sm.measured = false;  // dequant_linear's bias after 16-bit partials
    sm.from +=
        "; a bias after 16-bit split-K partials: added to the rounded sum and rounded again "
        "(fitted on 2 H200 launches, not held out)";
  }
  if (!sm.measured) {
    std::fprintf(stderr, "%s\n",
                 gemm::unverified_note("exmy gemm", accum, sm, M, w.N, w.K,
                                       type + (has_bias ? " (bias)" : ""))
                     .c_str());
  }
  return sm;
}

// F.linear(X, W_dq, bias) on the dequantized weight: the GEMM under linear_model's model (its
// model string, run as given: the same arithmetic on any rows of W), the bias added to the fp32
// result before the output rounding (the Lt bias epilogue: alpha = 1, one fp32 addition).
std::vector<std::uint32_t> dequant_linear(const std::vector<std::uint32_t>& x, std::size_t M,
                                          const quant::Bnb4Weight& w, Bnb4Dtype dt,
                                          const std::vector<std::uint32_t>& bias,
                                          const std::string& accum, Device dev,
                                          gemm::ShapeModel& sm) {
  const std::vector<std::uint32_t> wd = quant::bnb4_dequantize(w.q, w.N * w.K, dt, w.opt);
  const bool f32 = dt == Bnb4Dtype::fp32;
  gemm::Operand A, B;
  if (f32) {
    std::vector<float> xa(x.size()), wa(wd.size());
    for (std::size_t i = 0; i < x.size(); ++i) xa[i] = native::f32_from_bits(x[i]);
    for (std::size_t i = 0; i < wd.size(); ++i) wa[i] = native::f32_from_bits(wd[i]);
    A = gemm::operand_from_fp32(xa, M, w.K);
    B = gemm::operand_from_fp32(wa, w.N, w.K);
  } else {
    const FloatFormat f = dt == Bnb4Dtype::bf16 ? formats::bf16 : formats::fp16;
    A = gemm::operand_from_codes(std::vector<std::uint16_t>(x.begin(), x.end()), M, w.K, f);
    B = gemm::operand_from_codes(std::vector<std::uint16_t>(wd.begin(), wd.end()), w.N, w.K, f);
  }
  const gemm::OutFormat of = f32                     ? gemm::OutFormat::fp32
                             : dt == Bnb4Dtype::bf16 ? gemm::OutFormat::bf16
                                                     : gemm::OutFormat::fp16;
  sm = linear_model(M, w, dt, !bias.empty(), accum);
  const gemm::AccumModel run = gemm::parse_accum_model(sm.spec, f32 ? 32 : 16);
  gemm::check_gemm_problem(A, B, run, 1.0, of);
  if (bias.empty()) return run_model(A, B, run, of, dev);
  static constexpr FloatFormat kBf16 = formats::bf16, kFp16 = formats::fp16;
  auto bias_of = [&](std::size_t j) {
    const std::uint32_t b = bias[j];
    return f32 ? native::f32_from_bits(b)
               : native::to_float(dt == Bnb4Dtype::bf16 ? kBf16 : kFp16, b);
  };
  if (run.rp) {
    // 16-bit split-K partials (splitKreduce reading X's dtype) and a bias: the rp GEMM's output
    // (its partials' fp32 sum rounded to X's dtype), then the bias added in fp32 and rounded
    // again. Fitted on the H200's two such launches of bitsandbytes' dequantize + F.linear
    // (bf16 64x999x333 and 64x17x4160: every output; adding the bias to the fp32 sum before the
    // one rounding misses 41% and 51% of them; bench/results/2026-12-02-h200-qlora-linear.md):
    // announced (linear_model).
    std::vector<std::uint32_t> y = run_model(A, B, run, of, dev);
    const FloatFormat f = dt == Bnb4Dtype::bf16 ? formats::bf16 : formats::fp16;
    for (std::size_t i = 0; i < y.size(); ++i) {
      y[i] = native::bnb4_store(native::rn_add(native::to_float(f, y[i]), bias_of(i % w.N)), dt);
    }
    return y;
  }
  std::vector<std::uint32_t> c = run_model(A, B, run, gemm::OutFormat::fp32, dev);
  for (std::size_t i = 0; i < c.size(); ++i) {
    c[i] = native::bnb4_store(native::rn_add(native::f32_from_bits(c[i]), bias_of(i % w.N)), dt);
  }
  return c;
}

// gemm_4bit_sm80_m16n8k16: the kernel's dequantized B (bnb4_mma_weight) times X under the
// tensor-core model `accum` (mma.sync.m16n8k16 over K in order from +0; no split), then the
// kernel's epilogue (bias in fp32, FTZ add, cvt.rn).
std::vector<std::uint32_t> mma_kernel(const std::vector<std::uint32_t>& x, std::size_t M,
                                      const quant::Bnb4Weight& w, Bnb4Dtype dt,
                                      const std::vector<std::uint32_t>& bias,
                                      const std::string& accum, Device dev) {
  const FloatFormat f = dt == Bnb4Dtype::bf16 ? formats::bf16 : formats::fp16;
  const gemm::Operand A =
      gemm::operand_from_codes(std::vector<std::uint16_t>(x.begin(), x.end()), M, w.K, f);
  const gemm::Operand B = gemm::operand_from_codes(quant::bnb4_mma_weight(w, dt), w.N, w.K, f);
  const gemm::AccumModel m = gemm::parse_accum_model(accum, 16);
  if (m.library || m.split_k > 1 || m.chunk != 0) {
    throw InputError("--mma-accum " + accum +
                     ": the MMA kernel runs one mma.sync chain per output (an instruction model "
                     "such as sm90, sm80 or hw:k=...,frac=..., no split or chunk)");
  }
  gemm::check_gemm_problem(A, B, m, 1.0, gemm::OutFormat::fp32);
  std::vector<std::uint32_t> c = run_model(A, B, m, gemm::OutFormat::fp32, dev);
  for (std::size_t i = 0; i < c.size(); ++i) {
    const float bf = bias.empty() ? 0.0f : native::to_float(f, bias[i % w.N]);
    c[i] = quant::bnb4_kernel_store(native::f32_from_bits(c[i]), bf, dt);
  }
  return c;
}

}  // namespace

bool is_bnb4_gemm(const Args& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--b-format" && i + 1 < args.size()) {
      return args[i + 1] == "nf4" || args[i + 1] == "fp4";
    }
    if (a == "--b-format=nf4" || a == "--b-format=fp4") return true;
  }
  return false;
}

int run_gemm_bnb4(const Args& args) {
  Bnb4GemmArgs g;
  const Options opts = bnb4_gemm_options(g);
  if (!opts.parse(args)) return 0;
  if (g.compat != "bnb-cuda") {
    throw InputError("--compat " + g.compat +
                     ": --b-format nf4|fp4 is bitsandbytes' 4-bit matmul (--compat bnb-cuda)");
  }
  const Bnb4Dtype dt = parse_dtype(g.a_fmt, "--a-format");
  if (g.out_fmt != g.a_fmt) {
    throw InputError("--out-format " + g.out_fmt + ": matmul_4bit returns X's dtype (" + g.a_fmt +
                     ")");
  }
  if (g.path != "auto" && g.path != "simt" && g.path != "mma" && g.path != "dequant-linear" &&
      g.path != "gemv") {
    throw InputError("--path '" + g.path + "': expected auto, simt, mma, dequant-linear or gemv");
  }
  quant::Bnb4Weight w;
  parse_nk(g.b_shape, w.N, w.K);
  w.opt.type = quant::parse_bnb4_type(g.b_fmt);
  w.opt.block = g.block;
  w.opt.double_quant = g.double_quant;
  quant::check_bnb4_block(g.block);
  {
    const io::NpyArray b = io::read_npy(g.b_path);
    io::require_c_order(b, g.b_path);
    w.q.packed = io::as_u8(b, g.b_path);
  }
  const io::NpyArray st = io::read_npy(g.absmax_path);
  if (g.double_quant) {
    if (g.state2_path.empty() || g.offset_path.empty()) {
      throw InputError("--double-quant: needs --state2 and --offset");
    }
    w.q.absmax_codes = io::as_u8(st, g.absmax_path);
    w.q.absmax2 = io::as_f32(io::read_npy(g.state2_path), g.state2_path);
    const std::vector<float> off = io::as_f32(io::read_npy(g.offset_path), g.offset_path);
    if (off.size() != 1) {
      throw InputError(g.offset_path + ": expected one fp32 offset, got " +
                       std::to_string(off.size()) + " values");
    }
    w.q.offset = off[0];
  } else {
    if (!g.state2_path.empty() || !g.offset_path.empty()) {
      throw InputError("--state2 / --offset: only with --double-quant");
    }
    w.q.absmax = io::as_f32(st, g.absmax_path);
  }
  quant::check_bnb4_weight(w);
  std::vector<std::size_t> xshape;
  const std::vector<std::uint32_t> x = read_codes(g.a_path, dt, "--a", xshape);
  if (xshape.empty() || xshape.back() != w.K) {
    throw InputError("--a " + g.a_path + ": the last dimension must be K = " + std::to_string(w.K) +
                     " (quant_state.shape[1])");
  }
  const std::size_t M = x.size() / w.K;
  if (M == 0) throw InputError("--a " + g.a_path + ": no rows (matmul_4bit returns an empty Y)");
  std::vector<std::uint32_t> bias;
  if (!g.bias_path.empty()) {
    std::vector<std::size_t> bshape;
    bias = read_codes(g.bias_path, dt, "--bias", bshape);
    if (bshape.size() != 1 || bias.size() != w.N) {
      throw InputError("--bias " + g.bias_path + ": expected 1-d of N = " + std::to_string(w.N) +
                       " values");
    }
  }
  quant::Bnb4MatmulPath p = quant::bnb4_matmul_path(M, w.N, w.K, dt, g.block, g.gpu);
  if (g.path == "simt") p = quant::Bnb4MatmulPath::simt;
  if (g.path == "dequant-linear") p = quant::Bnb4MatmulPath::dequant_linear;
  if (g.path == "mma") p = quant::Bnb4MatmulPath::mma_sm80;
  const bool gemv = g.path == "gemv";
  if (gemv && (M != 1 || !bias.empty())) {
    throw InputError("--path gemv: F.gemv_4bit takes one row of X and no bias");
  }
  if (p == quant::Bnb4MatmulPath::mma_sm75) {
    throw InputError(
        "bitsandbytes takes its sm_75 MMA kernel (m16n8k8) here: exmy does not model "
        "it (--path simt|mma|dequant-linear forces another path)");
  }
  if (p == quant::Bnb4MatmulPath::mma_sm80 && (dt == Bnb4Dtype::fp32 || w.K % 64 != 0)) {
    throw InputError("--path mma: the MMA kernel needs bf16/fp16 and K a multiple of 64");
  }
  std::string mma_accum = g.mma_accum;
  if (mma_accum.empty()) mma_accum = g.gpu.cc_major >= 9 ? "sm90" : "sm80";
  const bool linear = !gemv && p == quant::Bnb4MatmulPath::dequant_linear;
  const char* path_name = gemv ? "gemv_naive" : quant::bnb4_path_name(p);
  // The JSON line: the path, and for dequant-linear the GEMM model and its provenance.
  auto json_line = [&](const gemm::ShapeModel* sm) {
    std::string j = "{\"path\":\"" + std::string(path_name) + "\",\"M\":" + std::to_string(M) +
                    ",\"N\":" + std::to_string(w.N) + ",\"K\":" + std::to_string(w.K);
    if (sm != nullptr) {
      j += ",\"bias\":" + std::string(bias.empty() ? "false" : "true") +
           ",\"accum_model\":" + io::json_string(sm->spec) +
           ",\"verified\":" + (sm->measured ? "true" : "false") +
           ",\"rule\":" + io::json_string(sm->from);
    }
    return j + "}";
  };
  if (g.plan) {
    gemm::ShapeModel sm;
    if (linear) sm = linear_model(M, w, dt, !bias.empty(), g.accum);
    std::printf("%s\n", json_line(linear ? &sm : nullptr).c_str());
    return 0;
  }
  gemm::ShapeModel lin_sm;
  const std::vector<std::uint32_t> y =
      gemv                               ? quant::bnb4_gemv_naive(x, w, dt)
      : p == quant::Bnb4MatmulPath::simt ? quant::bnb4_gemm_simt(x, M, w, dt, bias)
      : p == quant::Bnb4MatmulPath::mma_sm80
          ? mma_kernel(x, M, w, dt, bias, mma_accum, g.device)
          : dequant_linear(x, M, w, dt, bias, g.accum, g.device, lin_sm);
  std::vector<std::size_t> yshape = xshape;
  yshape.back() = w.N;
  io::NpyFileWriter out(g.out, descr_of(dt), yshape);
  if (dt == Bnb4Dtype::fp32) {
    out.write(y.data(), y.size() * sizeof(std::uint32_t));
  } else {
    const std::vector<std::uint16_t> h(y.begin(), y.end());
    out.write(h.data(), h.size() * sizeof(std::uint16_t));
  }
  out.commit();
  if (g.json) {
    std::printf("%s\n", json_line(linear ? &lin_sm : nullptr).c_str());
  } else {
    std::printf("matmul_4bit %s: M %zu, N %zu, K %zu, %s blocks of %zu%s\n",
                quant::bnb4_path_name(p), M, w.N, w.K, quant::bnb4_type_name(w.opt.type), g.block,
                g.double_quant ? ", double quantization" : "");
  }
  return 0;
}

}  // namespace exmy::cli
