// exmy layer --kind KIND --x X.npy --w W.npy --g G.npy --out-dir DIR [--dtype bf16|fp16|fp32]
//            [--accum MODEL] [--fwd-format F] [--bwd-format F] [--mask-outer clamp|keep]
//            [--mask-inner min|zero|keep] [--device cpu|cuda] [--strict]
// One low-precision linear layer (docs/SEMANTICS.md 16): DIR/y.npy = X W^T, DIR/x_grad.npy =
// G W, DIR/w_grad.npy = G^T X. X is b x n, W is m x n, G is b x m (row-major); inputs and
// outputs are <u2 bit patterns for bf16/fp16 (or <f4 values that are values of the dtype) and
// <f4 for fp32. Every input is checked before anything is written; the three outputs appear
// together (written to DIR.partial, then renamed) or not at all; DIR must not exist.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/layer/layer.hpp"
#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/accum_model.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/linear_layer.hpp"
#include "sim/native/convert.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy layer --kind KIND --x X.npy --w W.npy --g G.npy --out-dir DIR "
    "[--dtype bf16|fp16|fp32] [--accum MODEL] [--fwd-format F] [--bwd-format F] "
    "[--mask-outer clamp|keep] [--mask-inner min|zero|keep] [--device cpu|cuda] [--strict]\n"
    "  --strict: refuse (exit 2) a product whose shape lies outside the set on which a library\n"
    "  model (cublas-sm90) was verified; without it each such product's rule is named on stderr\n"
    "  KIND: plain, switchback, switchback-m, switchback-q, llm-int8, fp8-tensorwise, "
    "switchback-fp8, masked:eXmY\n"
    "  X: b x n, W: m x n, G: b x m; writes DIR/y.npy (b x m), DIR/x_grad.npy (b x n), "
    "DIR/w_grad.npy (m x n)\n";

struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<float> v;
};

Matrix read_matrix(const std::string& path, layer::DType d, const char* name) {
  const io::NpyArray a = io::read_npy(path);
  io::require_c_order(a, path);
  if (a.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(a.shape.size()) + "-d array (expected the 2-d " +
                     name + ")");
  }
  Matrix m;
  m.rows = a.shape[0];
  m.cols = a.shape[1];
  if (a.descr == "<f4") {
    m.v = io::as_f32(a, path);
  } else if (a.descr == "<u2" && d != layer::DType::fp32) {
    const std::vector<std::uint16_t> codes = io::as_u16(a, path);
    const FloatFormat& f = layer::dtype_format(d);
    m.v.resize(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
      m.v[i] = static_cast<float>(native::to_double(f, codes[i]));
    }
  } else {
    throw InputError(path + ": dtype " + a.descr + " (expected <f4" +
                     (d == layer::DType::fp32 ? "" : " or <u2 " + layer::dtype_name(d) + " codes") +
                     " for --dtype " + layer::dtype_name(d) + ")");
  }
  return m;
}

io::NpyArray output_array(const std::vector<float>& v, std::size_t rows, std::size_t cols,
                          layer::DType d) {
  if (d == layer::DType::fp32) return io::make_npy(v, {rows, cols});
  const FloatFormat& f = layer::dtype_format(d);
  std::vector<std::uint16_t> codes(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &v[i], 4);
    // Exact: every value is already of the dtype (NaN keeps its quiet NaN).
    codes[i] = static_cast<std::uint16_t>(native::convert(formats::fp32, f, Rounding{}, u, 0).code);
  }
  return io::make_npy(codes, {rows, cols});
}

int run_layer(const Args& args) {
  std::string kind, x_path, w_path, g_path, out_dir, dtype = "bf16", accum = "fp32-seq";
  std::string fwd = "e4m3fn", bwd = "e5m2", outer = "clamp", inner = "min", device = "cpu";
  bool strict = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--kind") {
      kind = option_value(args, i);
    } else if (a == "--x") {
      x_path = option_value(args, i);
    } else if (a == "--w") {
      w_path = option_value(args, i);
    } else if (a == "--g") {
      g_path = option_value(args, i);
    } else if (a == "--out-dir") {
      out_dir = option_value(args, i);
    } else if (a == "--dtype") {
      dtype = option_value(args, i);
    } else if (a == "--accum") {
      accum = option_value(args, i);
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--fwd-format") {
      fwd = option_value(args, i);
    } else if (a == "--bwd-format") {
      bwd = option_value(args, i);
    } else if (a == "--mask-outer") {
      outer = option_value(args, i);
    } else if (a == "--mask-inner") {
      inner = option_value(args, i);
    } else if (a == "--device") {
      device = option_value(args, i);
    } else {
      throw InputError("argument '" + a + "': unexpected (" + kUsage + ")");
    }
  }
  for (const auto& [v, name] : {std::pair<std::string, const char*>{kind, "--kind"},
                                {x_path, "--x"},
                                {w_path, "--w"},
                                {g_path, "--g"},
                                {out_dir, "--out-dir"}}) {
    if (v.empty()) throw InputError(std::string(name) + ": required (exmy layer --help)");
  }
  layer::LayerConfig cfg;
  layer::parse_kind(kind, cfg);
  cfg.dtype = layer::parse_dtype(dtype);
  cfg.accum = gemm::parse_accum_model(accum, layer::dtype_bits(cfg.dtype));
  if (cfg.accum.kind == gemm::AccumKind::exact && device == "cuda") {
    throw InputError("--accum exact: the CPU reference only (MPFR); --device cuda runs the "
                     "fp32-seq, pairwise and hw models");
  }
  for (const auto& [text, fmt, name] :
       {std::tuple<const std::string&, FloatFormat*, const char*>{fwd, &cfg.fwd_format,
                                                                   "--fwd-format"},
        {bwd, &cfg.bwd_format, "--bwd-format"}}) {
    const Format f = parse_format(text);
    if (f.kind != FormatKind::floating || f.fp.total_bits() > 8) {
      throw InputError(std::string(name) + " '" + text + "': expected a float format of at most 8 bits");
    }
    *fmt = f.fp;
  }
  const RoundSpec ms = parse_round_spec("mask:outer=" + outer + ",inner=" + inner);
  cfg.mask_outer = ms.outer;
  cfg.mask_inner = ms.inner;
  const Device dev = parse_device(device);
  const Matrix X = read_matrix(x_path, cfg.dtype, "X (b x n)");
  const Matrix W = read_matrix(w_path, cfg.dtype, "W (m x n)");
  const Matrix G = read_matrix(g_path, cfg.dtype, "G (b x m)");
  if (W.cols != X.cols || G.rows != X.rows || G.cols != W.rows) {
    throw InputError("shapes X " + std::to_string(X.rows) + "x" + std::to_string(X.cols) + ", W " +
                     std::to_string(W.rows) + "x" + std::to_string(W.cols) + ", G " +
                     std::to_string(G.rows) + "x" + std::to_string(G.cols) +
                     ": expected X b x n, W m x n, G b x m");
  }
  namespace fs = std::filesystem;
  if (fs::exists(out_dir)) {
    throw InputError("--out-dir '" + out_dir + "': exists (expected a new directory)");
  }
  const layer::LayerShape s{X.rows, X.cols, W.rows};
  if (cfg.accum.by_shape) {
    // cublas-sm90's 16-bit/TF32 chunk is probed per shape: say which products extrapolate.
    const std::string type = layer::dtype_name(cfg.dtype);  // fp32: the SGEMM (TF32 off)
    // Which products of the kind are 16-bit GEMMs (SEMANTICS 16's table); the others are int8.
    using K = layer::Kind;
    const bool fwd16 = cfg.kind == K::plain || cfg.kind == K::fp8_tensorwise ||
                       cfg.kind == K::switchback_fp8 || cfg.kind == K::masked;
    const bool wg16 = cfg.kind != K::llm_int8;
    const struct {
      const char* name;
      std::size_t M, N, K;
      bool sixteen;
    } products[] = {{"Y", s.b, s.m, s.n, fwd16},
                    {"X_grad", s.b, s.n, s.m, fwd16},
                    {"W_grad", s.m, s.n, s.b, wg16}};
    for (const auto& p : products) {
      if (!p.sixteen) continue;
      const gemm::ShapeModel sm = gemm::model_for_shape(cfg.accum, p.M, p.N, p.K, type);
      if (!sm.measured) {
        // Outside the verified set: one line naming the rule (as exmy gemm), or --strict refuses.
        const std::string note = gemm::unverified_note(std::string("exmy layer: ") + p.name,
                                                       accum, sm, p.M, p.N, p.K, type);
        if (strict) {
          throw InputError("--strict: " + std::string(p.name) + " (" + std::to_string(p.M) +
                           " x " + std::to_string(p.N) + " x " + std::to_string(p.K) +
                           ") lies outside the shapes on which --accum " + accum +
                           " was verified; nothing written");
        }
        std::fprintf(stderr, "%s\n", note.c_str());
      }
    }
  }
  const layer::LayerResult r = dev == Device::cuda
                                   ? gpu::layer::run_layer(cfg, s, X.v, W.v, G.v)
                                   : layer::run_layer(cfg, s, X.v, W.v, G.v);
  const std::string partial = out_dir + ".partial";
  fs::remove_all(partial);
  fs::create_directories(partial);
  try {
    io::write_npy(partial + "/y.npy", output_array(r.y, s.b, s.m, cfg.dtype));
    io::write_npy(partial + "/x_grad.npy", output_array(r.x_grad, s.b, s.n, cfg.dtype));
    io::write_npy(partial + "/w_grad.npy", output_array(r.w_grad, s.m, s.n, cfg.dtype));
    fs::rename(partial, out_dir);
  } catch (...) {
    fs::remove_all(partial);
    throw;
  }
  return 0;
}

}  // namespace

EXMY_COMMAND("layer", run_layer,
             "one low-precision linear layer (SwitchBack, LLM.int8(), float8, masked): Y, "
             "X_grad, W_grad");

}  // namespace exmy::cli
