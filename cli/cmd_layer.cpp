// exmy layer --kind KIND --x X.npy --w W.npy --g G.npy --out DIR [OPTIONS] (exmy layer --help)
// One low-precision linear layer (docs/SEMANTICS.md 16): DIR/y.npy = X W^T, DIR/x_grad.npy =
// G W, DIR/w_grad.npy = G^T X. X is b x n, W is m x n, G is b x m (row-major); inputs and
// outputs are <u2 bit patterns for bf16/fp16 (or <f4 values that are values of the dtype) and
// <f4 for fp32. Every input is checked before anything is written; the outputs stream into a
// staging directory beside DIR as they are computed, which is renamed to DIR in one step: they
// appear together or not at all; DIR must not exist, and nothing that exists is ever deleted.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/layer/layer.hpp"
#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/accum_model.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/linear_layer.hpp"
#include "sim/layer/recipe.hpp"
#include "sim/native/convert.hpp"

namespace exmy::cli {
namespace {

// An input matrix, read in place: <f4 files and <u2 codes stay mapped (a view of the mapping);
// <f4 data at an unaligned offset is copied once.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::unique_ptr<io::NpyMappedFile> file;
  std::vector<float> decoded;
  layer::MatView view;
};

Matrix read_matrix(const std::string& path, layer::DType d, const char* name) {
  auto file = std::make_unique<io::NpyMappedFile>(path);
  const io::NpyHeader& h = file->header();
  io::require_c_order(h, path);
  if (h.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(h.shape.size()) + "-d array (expected the 2-d " +
                     name + ")");
  }
  Matrix m;
  m.rows = h.shape[0];
  m.cols = h.shape[1];
  if (h.descr == "<f4" && h.data_offset % alignof(float) == 0) {
    // The mapping is page-aligned: so are the floats.
    m.view = layer::view_of(reinterpret_cast<const float*>(file->data()), m.rows, m.cols);
    m.file = std::move(file);
  } else if (h.descr == "<f4") {
    m.decoded.resize(h.count());  // a header of unusual length: aligned by a copy
    if (!m.decoded.empty()) std::memcpy(m.decoded.data(), file->data(), m.decoded.size() * 4);
    m.view = layer::view_of(m.decoded.data(), m.rows, m.cols);
  } else if (h.descr == "<u2" && d != layer::DType::fp32) {
    // Codes decode through a table of their fp32 values where they are read (MatView::at).
    m.view = layer::view_of_codes(reinterpret_cast<const std::uint16_t*>(file->data()), m.rows,
                                  m.cols, d);
    m.file = std::move(file);
  } else {
    throw InputError(path + ": dtype " + h.descr + " (expected <f4" +
                     (d == layer::DType::fp32 ? "" : " or <u2 " + layer::dtype_name(d) + " codes") +
                     " for --dtype " + layer::dtype_name(d) + ")");
  }
  return m;
}

// One output file, written a block of rows at a time as the layer delivers them: fp32 values as
// <f4, bf16/fp16 as <u2 codes.
class OutputFile {
 public:
  OutputFile(const std::string& path, std::size_t rows, std::size_t cols, layer::DType d)
      : w_(path, d == layer::DType::fp32 ? "<f4" : "<u2", {rows, cols}), cols_(cols), d_(d) {}
  void write(const float* v, std::size_t count) {
    if (d_ == layer::DType::fp32) {
      w_.write(v, count * sizeof(float));
      return;
    }
    const FloatFormat& f = layer::dtype_format(d_);
    for (std::size_t i0 = 0; i0 < count; i0 += std::size_t{1} << 20) {
      const std::size_t i1 = std::min(count, i0 + (std::size_t{1} << 20));
      codes_.resize(i1 - i0);
      for (std::size_t i = i0; i < i1; ++i) {
        std::uint32_t u;
        std::memcpy(&u, &v[i], 4);
        // Exact: every value is already of the dtype (NaN keeps its quiet NaN).
        codes_[i - i0] =
            static_cast<std::uint16_t>(native::convert(formats::fp32, f, Rounding{}, u, 0).code);
      }
      w_.write(codes_.data(), codes_.size() * sizeof(std::uint16_t));
    }
  }
  layer::RowSink sink() {
    return [this](std::size_t i0, std::size_t i1, const float* v) { write(v, (i1 - i0) * cols_); };
  }
  void commit() { w_.commit(); }

 private:
  io::NpyFileWriter w_;
  std::size_t cols_;
  layer::DType d_;
  std::vector<std::uint16_t> codes_;
};

// What `exmy layer` was asked for: the texts, checked after parsing in a fixed order (--accum
// is parsed for --dtype). The initial values are the defaults --help prints.
struct LayerArgs {
  std::string kind, x_path, w_path, g_path, out_dir, dtype = "bf16", accum = "fp32-seq";
  std::string fwd = "e4m3fn", bwd = "e5m2", outer = "clamp", inner = "min", device = "cpu";
  bool strict = false, json = false, quiet = false, accum_given = false;
  // --recipe (SEMANTICS 16.1) and its options.
  std::string recipe, state, accum_fast = "auto", amax_algo = "max", fp8_format = "auto";
  std::string margin = "0", history = "1024", amax_epsilon = "0";
  bool pow2 = false, fp32_scales = false;
};

Options layer_options(LayerArgs& a) {
  Options opts("exmy layer --kind KIND --x X.npy --w W.npy --g G.npy --out DIR [OPTIONS]",
               "One low-precision linear layer (docs/SEMANTICS.md 16): DIR/y.npy = X W^T "
               "(b x m), DIR/x_grad.npy = G W (b x n), DIR/w_grad.npy = G^T X (m x n), for X "
               "b x n, W m x n, G b x m. Inputs and outputs are <u2 bit patterns for bf16/fp16 (or "
               "<f4 values of the dtype) and <f4 for fp32; the three outputs appear together or "
               "not at all.",
               "exmy layer --kind switchback --x X.npy --w W.npy --g G.npy --out out");
  const auto text = [](std::string& into) { return [&into](const std::string& v) { into = v; }; };
  opts.value({"--kind"}, "KIND",
             "plain, switchback, switchback-m, switchback-q, llm-int8, fp8-tensorwise, "
             "switchback-fp8 or masked:eXmY (or --recipe)",
             "one of --kind, --recipe", text(a.kind))
      .value({"--recipe"}, "NAME",
             std::string("one training step under a library's recipe (SEMANTICS 16.1): ") +
                 layer::recipe_list() + "; writes the recipe's state beside the outputs",
             "one of --kind, --recipe", text(a.recipe))
      .value({"--state"}, "DIR",
             "te-delayed: the state before the step (amax_history.npy L x 3, scale.npy 3; <f4)",
             "a fresh state (zeros, scales 1)", text(a.state))
      .value({"--accum-fast"}, "MODEL",
             "--recipe: the model of the GEMMs run with fast accumulation (the forward)",
             "auto: --accum without its promotion", text(a.accum_fast))
      .value({"--history"}, "L", "te-delayed without --state: amax_history_len", a.history,
             text(a.history))
      .value({"--margin"}, "M", "te-delayed: margin", a.margin, text(a.margin))
      .value({"--amax-algo"}, "max|most_recent", "te-delayed: amax_compute_algo", a.amax_algo,
             text(a.amax_algo))
      .value({"--fp8-format"}, "auto|hybrid|e4m3",
             "te-*: fp8_format (hybrid: G in e5m2; auto: each recipe's default, hybrid for "
             "te-delayed/te-current, e4m3 for te-block/te-mxfp8)",
             a.fp8_format, text(a.fp8_format))
      .value({"--amax-epsilon"}, "E", "te-current, te-block: amax_epsilon", a.amax_epsilon,
             text(a.amax_epsilon))
      .flag({"--pow2-scale"}, "te-current: power_2_scale", [&] { a.pow2 = true; })
      .flag({"--fp32-scales"},
            "te-block: fp32 tile scales (NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1) instead of the "
            "recipe's power-of-two ones",
            [&] { a.fp32_scales = true; })
      .value({"--x"}, "X.npy", "the input X, b x n", Options::kRequired, text(a.x_path))
      .value({"--w"}, "W.npy", "the weights W, m x n", Options::kRequired, text(a.w_path))
      .value({"--g"}, "G.npy", "the output gradient G, b x m", Options::kRequired, text(a.g_path))
      .value({"--out", "--out-dir"}, "DIR", "the directory to write (must not exist)",
             Options::kRequired, text(a.out_dir))
      .value({"--dtype"}, "bf16|fp16|fp32", "the layer's 16- or 32-bit type", a.dtype,
             text(a.dtype))
      .value({"--accum"}, "MODEL",
             "accumulation model of the dtype products (SEMANTICS 15.2); --recipe: of every "
             "product (default cublas-sm90; te-mxfp8: sm100)",
             a.accum,
             [&a](const std::string& v) {
               a.accum = v;
               a.accum_given = true;
             })
      .value({"--fwd-format"}, "F", "float8 kinds: the format of X and W (<= 8 bits)", a.fwd,
             text(a.fwd))
      .value({"--bwd-format"}, "F", "float8 kinds: the format of G (<= 8 bits)", a.bwd, text(a.bwd))
      .value({"--mask-outer"}, "clamp|keep", "masked: values beyond the grid's range", a.outer,
             text(a.outer))
      .value({"--mask-inner"}, "min|zero|keep", "masked: values below the grid's smallest normal",
             a.inner, text(a.inner))
      .value({"--device"}, "cpu|cuda", "where the layer runs (same bits)", a.device, text(a.device))
      .flag({"--strict"},
            "refuse (exit 2) a product whose shape lies outside the set on which a library model "
            "(cublas-sm90) was verified; without it each such product's rule is named on stderr",
            [&] { a.strict = true; })
      .flag({"--json"}, "print one JSON object naming the files written and the shapes",
            [&] { a.json = true; })
      .flag({"--quiet"}, "no notes on stderr (products outside a model's verified shapes)",
            [&] { a.quiet = true; });
  return opts;
}

// --json: what was written, one object.
std::string layer_json(const LayerArgs& a, const layer::LayerConfig& cfg,
                       const layer::LayerShape& s) {
  const auto file = [&](const char* name) { return json_string(a.out_dir + "/" + name); };
  return "{\"out\": " + json_string(a.out_dir) +
         ", \"kind\": " + json_string(layer::kind_name(cfg)) +
         ", \"dtype\": " + json_string(layer::dtype_name(cfg.dtype)) +
         ", \"accum\": " + json_string(a.accum) + ", \"device\": " + json_string(a.device) +
         ", \"b\": " + std::to_string(s.b) + ", \"n\": " + std::to_string(s.n) +
         ", \"m\": " + std::to_string(s.m) + ", \"files\": {\"y\": " + file("y.npy") +
         ", \"x_grad\": " + file("x_grad.npy") + ", \"w_grad\": " + file("w_grad.npy") + "}}\n";
}

std::size_t parse_count(const std::string& text, const char* name, std::size_t lo, std::size_t hi) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size() || text[0] == '-' || v < lo || v > hi) {
    throw InputError(std::string(name) + " '" + text + "': expected an integer in " +
                     std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<std::size_t>(v);
}

std::vector<float> read_f32(const std::string& path, const std::vector<std::size_t>& shape) {
  const io::NpyArray arr = io::read_npy(path);
  std::size_t want = 1;
  for (std::size_t d : shape) want *= d;
  if (arr.descr != "<f4" || arr.fortran_order || arr.count() != want ||
      (arr.shape != shape && !(shape.size() == 1 && arr.shape.empty() && want == 1))) {
    std::string sh;
    for (std::size_t d : shape) sh += (sh.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(path + ": expected a C-order <f4 array of shape (" + sh + ")");
  }
  std::vector<float> v(want);
  if (want != 0) std::memcpy(v.data(), arr.data.data(), want * 4);
  return v;
}

// --recipe: one step of a library's recipe (SEMANTICS 16.1), CPU only.
int run_layer_recipe(const LayerArgs& a) {
  layer::RecipeConfig cfg;
  cfg.recipe = layer::parse_recipe(a.recipe);
  cfg.dtype = layer::parse_dtype(a.dtype);
  if (a.device != "cpu") {
    throw InputError("--recipe: --device " + a.device + " (recipes run on the CPU reference)");
  }
  const bool mxfp8 = cfg.recipe == layer::Recipe::te_mxfp8;
  const bool block = cfg.recipe == layer::Recipe::te_block || mxfp8;
  // te-mxfp8's GEMM is Blackwell's (cuBLASLt MXFP8 needs sm_100): MMA-Sim's block-scaled model.
  const std::string accum = a.accum_given ? a.accum : mxfp8 ? "sm100" : "cublas-sm90";
  cfg.fp8 = gemm::parse_accum_model(accum, 8);
  cfg.hp = gemm::parse_accum_model(accum, layer::dtype_bits(cfg.dtype));
  cfg.fp8_fast = a.accum_fast == "auto" ? layer::fast_accum_model(cfg.fp8)
                                        : gemm::parse_accum_model(a.accum_fast, 8);
  cfg.margin = static_cast<int>(parse_count(a.margin, "--margin", 0, 126));
  if (a.amax_algo != "max" && a.amax_algo != "most_recent") {
    throw InputError("--amax-algo '" + a.amax_algo + "': expected max or most_recent");
  }
  cfg.amax_max = a.amax_algo == "max";
  if (a.fp8_format != "auto" && a.fp8_format != "hybrid" && a.fp8_format != "e4m3") {
    throw InputError("--fp8-format '" + a.fp8_format + "': expected auto, hybrid or e4m3");
  }
  // Float8BlockScaling and MXFP8BlockScaling default to Format.E4M3, the per-tensor recipes to
  // Format.HYBRID (common/recipe/__init__.py).
  cfg.te_hybrid = a.fp8_format == "auto" ? !block : a.fp8_format == "hybrid";
  if (a.fp32_scales && cfg.recipe != layer::Recipe::te_block) {
    throw InputError("--fp32-scales: a te-block option (Float8BlockScaling's scale form)");
  }
  cfg.fp32_scales = a.fp32_scales;
  if (a.pow2 && block) {
    throw InputError(
        "--pow2-scale: a te-current option (te-block's scales are powers of two "
        "unless --fp32-scales; te-mxfp8's are E8M0)");
  }
  cfg.history = parse_count(a.history, "--history", 1, 1u << 20);
  {
    char* end = nullptr;
    const float e = std::strtof(a.amax_epsilon.c_str(), &end);
    if (a.amax_epsilon.empty() || *end != '\0' || !(e >= 0.0f) || !std::isfinite(e)) {
      throw InputError("--amax-epsilon '" + a.amax_epsilon + "': expected a finite value >= 0");
    }
    cfg.amax_epsilon = e;
    if (mxfp8 && e != 0.0f) {
      throw InputError("--amax-epsilon: MXFP8BlockScaling has none (te-current, te-block)");
    }
  }
  cfg.pow2 = a.pow2;
  layer::DelayedState prev;
  const bool has_state = !a.state.empty();
  if (has_state) {
    if (cfg.recipe != layer::Recipe::te_delayed) {
      throw InputError("--state: only te-delayed keeps a state between steps");
    }
    const io::NpyArray h = io::read_npy(a.state + "/amax_history.npy");
    if (h.shape.size() != 2 || h.shape[1] != 3 || h.shape[0] == 0) {
      throw InputError(a.state + "/amax_history.npy: expected shape (L, 3), L >= 1");
    }
    prev.history = h.shape[0];
    prev.amax_history = read_f32(a.state + "/amax_history.npy", {prev.history, 3});
    prev.scale = read_f32(a.state + "/scale.npy", {3});
  }
  const Matrix X = read_matrix(a.x_path, cfg.dtype, "X (b x n)");
  const Matrix W = read_matrix(a.w_path, cfg.dtype, "W (m x n)");
  const Matrix G = read_matrix(a.g_path, cfg.dtype, "G (b x m)");
  if (W.cols != X.cols || G.rows != X.rows || G.cols != W.rows) {
    throw InputError("shapes X " + std::to_string(X.rows) + "x" + std::to_string(X.cols) + ", W " +
                     std::to_string(W.rows) + "x" + std::to_string(W.cols) + ", G " +
                     std::to_string(G.rows) + "x" + std::to_string(G.cols) +
                     ": expected X b x n, W m x n, G b x m");
  }
  const std::string parent = io::parent_directory(a.out_dir, "--out");
  {
    struct stat st {};
    if (::lstat(a.out_dir.c_str(), &st) == 0) {
      throw InputError("--out '" + a.out_dir + "': exists (expected a new directory)");
    }
  }
  const layer::LayerShape s{X.rows, X.cols, W.rows};
  layer::LayerConfig lc;
  lc.dtype = cfg.dtype;
  layer::check_inputs(lc, s, X.view, W.view, G.view);
  const layer::RecipeResult r =
      layer::run_recipe(cfg, s, X.view, W.view, G.view, has_state ? &prev : nullptr);
  const io::StagingDir stage(parent);
  OutputFile y(stage.path() + "/y.npy", s.b, s.m, cfg.dtype);
  OutputFile xg(stage.path() + "/x_grad.npy", s.b, s.n, cfg.dtype);
  OutputFile wg(stage.path() + "/w_grad.npy", s.m, s.n, cfg.dtype);
  y.write(r.y.data(), r.y.size());
  xg.write(r.x_grad.data(), r.x_grad.size());
  wg.write(r.w_grad.data(), r.w_grad.size());
  y.commit();
  xg.commit();
  wg.commit();
  std::string files;
  for (const layer::StateArray& st : r.state) {
    const bool codes = !st.codes.empty();
    io::NpyFileWriter f(stage.path() + "/" + st.name + ".npy", codes ? io::kDescrU8 : "<f4",
                        st.shape);
    if (codes) {
      f.write(st.codes.data(), st.codes.size());
    } else {
      f.write(st.v.data(), st.v.size() * sizeof(float));
    }
    f.commit();
    files += ", " + json_string(st.name) + ": " + json_string(a.out_dir + "/" + st.name + ".npy");
  }
  io::publish_directory(stage.path(), a.out_dir, false);
  if (a.json) {
    std::fputs(
        ("{\"out\": " + json_string(a.out_dir) + ", \"recipe\": " +
         json_string(layer::recipe_name(cfg.recipe)) + ", \"accum\": " + json_string(accum) +
         ", \"accum_fast\": " + json_string(cfg.fp8_fast.name) + ", \"b\": " + std::to_string(s.b) +
         ", \"n\": " + std::to_string(s.n) + ", \"m\": " + std::to_string(s.m) +
         ", \"files\": {\"y\": " + json_string(a.out_dir + "/y.npy") +
         ", \"x_grad\": " + json_string(a.out_dir + "/x_grad.npy") +
         ", \"w_grad\": " + json_string(a.out_dir + "/w_grad.npy") + files + "}}\n")
            .c_str(),
        stdout);
  }
  return 0;
}

int run_layer(const Args& args) {
  LayerArgs a;
  if (!layer_options(a).parse(args)) return 0;
  if (a.kind.empty() == a.recipe.empty()) {
    throw InputError("exmy layer: give one of --kind KIND and --recipe NAME");
  }
  if (!a.recipe.empty()) return run_layer_recipe(a);
  const std::string &kind = a.kind, &x_path = a.x_path, &w_path = a.w_path, &g_path = a.g_path,
                    &out_dir = a.out_dir, &dtype = a.dtype, &accum = a.accum, &fwd = a.fwd,
                    &bwd = a.bwd, &outer = a.outer, &inner = a.inner, &device = a.device;
  const bool strict = a.strict;
  layer::LayerConfig cfg;
  layer::parse_kind(kind, cfg);
  cfg.dtype = layer::parse_dtype(dtype);
  cfg.accum = gemm::parse_accum_model(accum, layer::dtype_bits(cfg.dtype));
  if (cfg.accum.kind == gemm::AccumKind::exact && device == "cuda") {
    throw InputError(
        "--accum exact: the CPU reference only (MPFR); --device cuda runs the "
        "fp32-seq, pairwise and hw models");
  }
  for (const auto& [text, fmt, name] : {std::tuple<const std::string&, FloatFormat*, const char*>{
                                            fwd, &cfg.fwd_format, "--fwd-format"},
                                        {bwd, &cfg.bwd_format, "--bwd-format"}}) {
    const Format f = parse_format(text);
    if (f.kind != FormatKind::floating || f.fp.total_bits() > 8) {
      throw InputError(std::string(name) + " '" + text +
                       "': expected a float format of at most 8 bits");
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
  // DIR's parent holds the staging directory (the same file system, for the rename).
  const std::string parent = io::parent_directory(out_dir, "--out");
  {
    struct stat st {};
    if (::lstat(out_dir.c_str(), &st) == 0) {
      throw InputError("--out '" + out_dir + "': exists (expected a new directory)");
    }
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
      const gemm::ShapeModel sm = gemm::model_for_shape(cfg.accum, p.M, p.N, p.K, type, type);
      if (!sm.measured) {
        // Outside the verified set: one line naming the rule (as exmy gemm), or --strict refuses.
        const std::string note = gemm::unverified_note(std::string("exmy layer: ") + p.name, accum,
                                                       sm, p.M, p.N, p.K, type);
        if (strict) {
          throw InputError("--strict: " + std::string(p.name) + " (" + std::to_string(p.M) + " x " +
                           std::to_string(p.N) + " x " + std::to_string(p.K) +
                           ") lies outside the shapes on which --accum " + accum +
                           " was verified; nothing written");
        }
        if (!a.quiet) std::fprintf(stderr, "%s\n", note.c_str());
      }
    }
  }
  // Every input checked before anything is written.
  layer::check_inputs(cfg, s, X.view, W.view, G.view);
  const io::StagingDir stage(parent);
  OutputFile y(stage.path() + "/y.npy", s.b, s.m, cfg.dtype);
  OutputFile xg(stage.path() + "/x_grad.npy", s.b, s.n, cfg.dtype);
  OutputFile wg(stage.path() + "/w_grad.npy", s.m, s.n, cfg.dtype);
  // Each output streams into its file as the products deliver its rows (on the GPU engine too:
  // its GEMMs stage the mapped inputs a block of rows at a time, gpu/layer/layer.hpp).
  if (dev == Device::cuda) {
    gpu::layer::run_layer_rows(cfg, s, X.view, W.view, G.view, {y.sink(), xg.sink(), wg.sink()});
  } else {
    layer::run_layer_rows(cfg, s, X.view, W.view, G.view, {y.sink(), xg.sink(), wg.sink()});
  }
  y.commit();
  xg.commit();
  wg.commit();
  io::publish_directory(stage.path(), out_dir, false);
  if (a.json) std::fputs(layer_json(a, cfg, s).c_str(), stdout);
  return 0;
}

}  // namespace

EXMY_COMMAND("layer", run_layer,
             "one low-precision linear layer (SwitchBack, LLM.int8(), float8, masked): Y, "
             "X_grad, W_grad");

}  // namespace exmy::cli
