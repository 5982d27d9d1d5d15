// exmy gemm: C = A B^T under an accumulation model (docs/SEMANTICS.md 15). A is M x K and B is
// N x K, row-major; codes as |u1 for formats of at most 8 bits, <u2 for 9..16 bits (bf16/fp16 as
// bit patterns), <f4 for fp32/tf32. C is M x N: <f4 for fp32, <u2 bit patterns for bf16/fp16.
// --device cuda runs the emulation kernel (gpu/gemm/), the same bits for every model but exact.
// Every input is checked before anything is written; exit 2 names the bad input. The options are
// the table in run_gemm (`exmy gemm --help` prints it).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/cmd_gemm_bnb4.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {
namespace {

// --scale-a / --scale-b: a positive finite scale.
double positive_scale(const std::string& v, const std::string& what) {
  const double s = number::parse_f64(v, what);
  if (!(s > 0)) throw InputError(what + " '" + v + "': expected a positive finite scale");
  return s;
}

// The command line of exmy gemm, as given (checked by run_gemm).
struct GemmArgs {
  std::string a_path, b_path, out, a_fmt, b_fmt, out_fmt, accum, device = "cpu";
  std::string rows_path, cols_path, scale_order = "product", compat;
  std::string block_a_path, block_b_path, block_format = "e8m0fnu";
  std::size_t block = 0;       // 0: the block scale format's own block
  std::string tile_a, tile_b;  // fp32 block scales: RxC tiles of A and B (default 1x128)
  bool strict = false;
  double scale_a = 1.0, scale_b = 1.0;
};

// The option table of exmy gemm, filling `g`.
Options gemm_options(GemmArgs& g) {
  Options opts(
      "exmy gemm --a A.npy --b B.npy --out C.npy --a-format F --b-format F "
      "--out-format fp32|bf16|fp16 --accum MODEL|--compat NAME [OPTIONS]",
      "C = A B^T under an accumulation model (docs/SEMANTICS.md 15). A is M x K, B is "
      "N x K, row-major; C is M x N.",
      "exmy gemm --a a.npy --b b.npy --out c.npy --a-format bf16 --b-format bf16 "
      "--out-format fp32 --accum sm90");
  // F: the operand formats read_operand accepts.
  const std::string format_help =
      "an exmy float format of at most 16 bits (codes: |u1 up to 8 bits, <u2 above), fp32 or "
      "tf32 (<f4)";
  opts.value({"--a"}, "A.npy", "operand A, M x K", Options::kRequired,
             [&](const std::string& v) { g.a_path = v; })
      .value({"--b"}, "B.npy", "operand B, N x K", Options::kRequired,
             [&](const std::string& v) { g.b_path = v; })
      .value({"--out"}, "C.npy", "the product, M x N", Options::kRequired,
             [&](const std::string& v) { g.out = v; })
      .value({"--a-format"}, "F", "format of A: " + format_help, Options::kRequired,
             [&](const std::string& v) { g.a_fmt = v; })
      .value({"--b-format"}, "F",
             "format of B: " + format_help +
                 "; nf4|fp4 with --compat bnb-cuda: bitsandbytes' matmul_4bit (its options: "
                 "exmy gemm --b-format nf4 --help)",
             Options::kRequired, [&](const std::string& v) { g.b_fmt = v; })
      .value({"--out-format"}, "fp32|bf16|fp16",
             "format of C (<f4 for fp32, <u2 bit patterns for bf16/fp16)", Options::kRequired,
             [&](const std::string& v) { g.out_fmt = v; })
      .value({"--accum"}, "MODEL", "accumulation model: " + gemm::accum_model_help(),
             "the --compat profile's model; one of --accum and --compat is required",
             [&](const std::string& v) { g.accum = v; })
      .value({"--compat"}, "NAME",
             "a library profile naming the accumulation model (torch-cuda: cublas-sm90); not "
             "with --accum",
             "none", [&](const std::string& v) { g.compat = v; })
      .value({"--scale-a"}, "S", "positive finite scale of A (alpha = S_a S_b)", "1",
             [&](const std::string& v) { g.scale_a = positive_scale(v, "--scale-a"); })
      .value({"--scale-b"}, "S", "positive finite scale of B", "1",
             [&](const std::string& v) { g.scale_b = positive_scale(v, "--scale-b"); })
      .value({"--scale-a-rows"}, "SA.npy", "one finite <f4 scale per row of A (1-d or M x 1)",
             "none", [&](const std::string& v) { g.rows_path = v; })
      .value({"--scale-b-rows"}, "SB.npy", "one finite <f4 scale per row of B (1-d or N x 1)",
             "none", [&](const std::string& v) { g.cols_path = v; })
      .value({"--scale-order"}, "a-first|b-first|product",
             "fp32 order of the row scales on the accumulator (SEMANTICS 15.1)", g.scale_order,
             [&](const std::string& v) { g.scale_order = v; })
      .value({"--block-scale-a"}, "SA.npy",
             "block scales of A (MX: E8M0 per 32 k, NVFP4: UE4M3 per 16 k); with --block-scale-b",
             "none", [&](const std::string& v) { g.block_a_path = v; })
      .value({"--block-scale-b"}, "SB.npy", "block scales of B; with --block-scale-a", "none",
             [&](const std::string& v) { g.block_b_path = v; })
      .value({"--block-scale-format"}, "e8m0fnu|e4m3fn|fp32",
             "format of the block scales (fp32: <f4 tile scales, --block-a/--block-b; "
             "SEMANTICS 15.7)",
             g.block_format, [&](const std::string& v) { g.block_format = v; })
      .value({"--block-a"}, "RxC",
             "fp32 block scales: A's tile (rows x k), e.g. 1x128 (DeepSeek-V3 activations)",
             "1x128", [&](const std::string& v) { g.tile_a = v; })
      .value({"--block-b"}, "RxC",
             "fp32 block scales: B's tile (rows of B x k), e.g. 128x128 (weights)", "1x128",
             [&](const std::string& v) { g.tile_b = v; })
      .value({"--block"}, "B", "elements of k per block scale (1..4096)",
             "32 for e8m0fnu block scales, 16 for e4m3fn",
             [&](const std::string& v) {
               g.block = static_cast<std::size_t>(number::parse_u64(v, "--block", 4096));
             })
      .value({"--device"}, "cpu|cuda", "the CPU reference or the CUDA emulation kernel", g.device,
             [&](const std::string& v) { g.device = v; })
      .flag({"--strict"},
            "refuse (exit 2) a shape outside the set on which a library model (cublas-sm90) was "
            "verified; without it such a shape runs the rule named on stderr",
            [&] { g.strict = true; });
  return opts;
}

int run_gemm(const Args& args) {
  if (is_bnb4_gemm(args)) return run_gemm_bnb4(args);  // bitsandbytes' matmul_4bit (QLoRA)
  GemmArgs g;
  const Options opts = gemm_options(g);
  if (!opts.parse(args)) return 0;
  // A profile names the library's accumulation model (torch-cuda: cuBLASLt, `cublas-sm90`).
  if (!g.compat.empty()) {
    if (!g.accum.empty()) {
      throw InputError("--compat " + g.compat + " with --accum " + g.accum +
                       ": choose one (the profile names an accumulation model)");
    }
    g.accum = compat_gemm_accum(compat_profile(g.compat));
  }
  for (const auto& [v, name] : {std::pair<std::string, const char*>{g.a_path, "--a"},
                                {g.b_path, "--b"},
                                {g.out, "--out"},
                                {g.a_fmt, "--a-format"},
                                {g.b_fmt, "--b-format"},
                                {g.out_fmt, "--out-format"},
                                {g.accum, "--accum"}}) {
    if (v.empty()) throw InputError(std::string(name) + ": required; " + opts.usage_hint());
  }
  const gemm::OutFormat of = gemm::parse_out_format(g.out_fmt);
  const Device dev = parse_device(g.device);
  gemm::Operand A = gemm::read_operand(g.a_path, g.a_fmt, "A");
  gemm::Operand B = gemm::read_operand(g.b_path, g.b_fmt, "B");
  // Block scales (MX: E8M0 per 32 k, NVFP4: UE4M3 per 16 k), both operands or neither.
  if (g.block_a_path.empty() != g.block_b_path.empty()) {
    throw InputError(std::string(g.block_a_path.empty() ? "--block-scale-a" : "--block-scale-b") +
                     ": required with the other operand's block scales");
  }
  if (g.block_format == "fp32") {
    // Tile scales (SEMANTICS 15.7): <f4, ceil(rows / R) x ceil(K / C) per operand.
    if (g.block_a_path.empty()) {
      throw InputError("--block-scale-format fp32: needs --block-scale-a and --block-scale-b");
    }
    if (g.block != 0) {
      throw InputError("--block: the k extent of fp32 tile scales is C of --block-a/--block-b");
    }
    std::size_t ra = 0, ca = 0, rb = 0, cb = 0;
    gemm::parse_tile(g.tile_a.empty() ? "1x128" : g.tile_a, "--block-a", ra, ca);
    gemm::parse_tile(g.tile_b.empty() ? "1x128" : g.tile_b, "--block-b", rb, cb);
    if (ca != cb) {
      throw InputError("--block-a " + g.tile_a + " / --block-b " + g.tile_b +
                       ": the tiles' k extents differ (expected the same C)");
    }
    gemm::read_tile_scales(g.block_a_path, ra, ca, A, "A");
    gemm::read_tile_scales(g.block_b_path, rb, cb, B, "B");
  } else if (!g.tile_a.empty() || !g.tile_b.empty()) {
    throw InputError("--block-a / --block-b: only with --block-scale-format fp32");
  } else if (!g.block_a_path.empty()) {
    if (g.block == 0) g.block = g.block_format == "e4m3fn" ? 16 : 32;
    gemm::read_block_scales(g.block_a_path, g.block_format, g.block, A, "A");
    gemm::read_block_scales(g.block_b_path, g.block_format, g.block, B, "B");
  } else if (g.block != 0 || g.block_format != "e8m0fnu") {
    throw InputError("--block / --block-scale-format: only with --block-scale-a and -b");
  }
  const int bits = A.code_bits > B.code_bits ? A.code_bits : B.code_bits;
  gemm::AccumModel m = gemm::parse_accum_model(g.accum, bits);
  if (g.a_fmt == "tf32" || g.b_fmt == "tf32") m.truncate_tf32 = true;
  {
    // A library model (cublas-sm90) holds on the shapes it was verified on; elsewhere exmy says
    // which rule it applied (one line), and --strict refuses.
    const gemm::ShapeModel sm = gemm::operand_model(A, B, m, of);  // checks block-scale rules too
    if (!sm.measured) {
      const bool tf32 = A.type == "tf32" || B.type == "tf32";
      const std::string type = A.code_bits == 32 ? (tf32 ? "tf32" : "fp32") : A.type;
      const std::string note =
          gemm::unverified_note("exmy gemm", g.accum, sm, A.rows, B.rows, A.cols, type);
      if (g.strict) {
        std::string why = note.substr(note.find("--accum"));
        const std::size_t at = why.find("applied rule:");
        if (at != std::string::npos) why.replace(at, 13, "refused (the rule would apply:");
        throw InputError("--strict: " + why + ")");
      }
      std::fprintf(stderr, "%s\n", note.c_str());
    }
  }
  if (dev == Device::cuda && m.kind == gemm::AccumKind::exact) {
    throw InputError(
        "--accum exact: the CPU reference only (MPFR); --device cuda runs the "
        "fp32-seq, pairwise and hw models");
  }
  // Per-row scales: 1-d (or n x 1) <f4 arrays of finite values, one per row of A / of B.
  gemm::RowColScales rc;
  rc.order = gemm::parse_scale_order(g.scale_order);
  auto read_scales = [](const std::string& path, std::size_t want, const char* opt) {
    const io::NpyArray arr = io::read_npy(path);
    const std::vector<float> v = io::as_f32(arr, path);
    if (v.size() != want || arr.shape.size() > 2 || (arr.shape.size() == 2 && arr.shape[1] != 1)) {
      throw InputError(std::string(opt) + " " + path + ": " + std::to_string(v.size()) +
                       " values (expected " + std::to_string(want) + ", 1-d or n x 1)");
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!(v[i] - v[i] == 0)) {
        throw InputError(std::string(opt) + " " + path + ": value at index " + std::to_string(i) +
                         " is not finite");
      }
    }
    return v;
  };
  if (!g.rows_path.empty()) rc.a_rows = read_scales(g.rows_path, A.rows, "--scale-a-rows");
  if (!g.cols_path.empty()) rc.b_cols = read_scales(g.cols_path, B.rows, "--scale-b-rows");
  gemm::check_gemm_problem(A, B, m, g.scale_a * g.scale_b, of);
  const std::vector<std::size_t> shape{A.rows, B.rows};
  // C written as it is produced (no copy of the whole output on the CPU): fp32 as <f4 bit
  // patterns, bf16/fp16 as <u2 codes.
  const bool f32 = of == gemm::OutFormat::fp32;
  io::NpyFileWriter w(g.out, f32 ? "<f4" : "<u2", shape);
  std::vector<std::uint16_t> h;
  const auto put = [&](const std::uint32_t* c, std::size_t n) {
    if (f32) {
      w.write(c, n * sizeof(std::uint32_t));
      return;
    }
    for (std::size_t i0 = 0; i0 < n; i0 += std::size_t{1} << 20) {
      const std::size_t i1 = std::min(n, i0 + (std::size_t{1} << 20));
      h.assign(c + i0, c + i1);
      w.write(h.data(), h.size() * sizeof(std::uint16_t));
    }
  };
  if (dev == Device::cuda) {
    // Staged and returned a block of rows at a time (gpu::gemm_emulate_rows): the host holds A's
    // stored form, not its doubles (issue 36).
    gpu::gemm_emulate_rows(A, B, m, of, g.scale_a * g.scale_b, &rc,
                           [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                             put(c, (i1 - i0) * B.rows);
                           });
  } else {
    gemm::gemm_rows(A, B, m, of, g.scale_a * g.scale_b, &rc,
                    [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                      put(c, (i1 - i0) * B.rows);
                    });
  }
  w.commit();
  return 0;
}

}  // namespace

EXMY_COMMAND("gemm", run_gemm,
             "C = A B^T under an accumulation model (exact, fp32-seq, pairwise, sm80/sm90/sm100)");

}  // namespace exmy::cli
