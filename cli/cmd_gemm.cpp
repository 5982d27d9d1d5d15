// exmy gemm --a A.npy --b B.npy --out C.npy --a-format F --b-format F --out-format fp32|bf16|fp16
//           --accum MODEL [--scale-a S] [--scale-b S] [--device cpu|cuda]
// C = A B^T under an accumulation model (docs/SEMANTICS.md 15). A is M x K and B is N x K,
// row-major; codes as |u1 for formats of at most 8 bits, <u2 for 9..16 bits (bf16/fp16 as bit
// patterns), <f4 for fp32/tf32. C is M x N: <f4 for fp32, <u2 bit patterns for bf16/fp16.
// --device cuda runs the emulation kernel (gpu/gemm/), the same bits for every model but exact.
// Every input is checked before anything is written; exit 2 names the bad input.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy gemm --a A.npy --b B.npy --out C.npy --a-format F --b-format F "
    "--out-format fp32|bf16|fp16 --accum MODEL|--compat NAME [--scale-a S] [--scale-b S] "
    "[--scale-a-rows SA.npy] "
    "[--scale-b-rows SB.npy] [--scale-order a-first|b-first|product] [--block-scale-a SA.npy "
    "--block-scale-b SB.npy [--block-scale-format e8m0fnu|e4m3fn] [--block B]] "
    "[--device cpu|cuda] [--strict]\n"
    "  --strict: refuse (exit 2) a shape outside the set on which a library model (cublas-sm90)\n"
    "  was verified; without it such a shape runs the rule named on stderr\n"
    "  F: an exmy float format of at most 16 bits, fp32 or tf32; MODEL: ";

int run_gemm(const Args& args) {
  std::string a_path, b_path, out, a_fmt, b_fmt, out_fmt, accum, device = "cpu";
  std::string rows_path, cols_path, scale_order = "product", compat;
  std::string block_a_path, block_b_path, block_format = "e8m0fnu";
  std::size_t block = 0;
  bool strict = false;
  double scale_a = 1.0, scale_b = 1.0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s%s\n", kUsage, gemm::accum_model_help().c_str());
      return 0;
    } else if (a == "--a") {
      a_path = option_value(args, i);
    } else if (a == "--b") {
      b_path = option_value(args, i);
    } else if (a == "--out") {
      out = option_value(args, i);
    } else if (a == "--a-format") {
      a_fmt = option_value(args, i);
    } else if (a == "--b-format") {
      b_fmt = option_value(args, i);
    } else if (a == "--out-format") {
      out_fmt = option_value(args, i);
    } else if (a == "--device") {
      device = option_value(args, i);
    } else if (a == "--scale-a-rows") {
      rows_path = option_value(args, i);
    } else if (a == "--scale-b-rows") {
      cols_path = option_value(args, i);
    } else if (a == "--scale-order") {
      scale_order = option_value(args, i);
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--accum") {
      accum = option_value(args, i);
    } else if (a == "--compat") {
      compat = option_value(args, i);
    } else if (a == "--block-scale-a") {
      block_a_path = option_value(args, i);
    } else if (a == "--block-scale-b") {
      block_b_path = option_value(args, i);
    } else if (a == "--block-scale-format") {
      block_format = option_value(args, i);
    } else if (a == "--block") {
      block = static_cast<std::size_t>(number::parse_u64(option_value(args, i), "--block", 4096));
    } else if (a == "--scale-a" || a == "--scale-b") {
      const std::string v = option_value(args, i);
      const double s = number::parse_f64(v, a);
      if (!(s > 0)) throw InputError(a + " '" + v + "': expected a positive finite scale");
      (a == "--scale-a" ? scale_a : scale_b) = s;
    } else {
      throw InputError("argument '" + a + "': unexpected (" + kUsage + "...)");
    }
  }
  // A profile names the library's accumulation model (torch-cuda: cuBLASLt, `cublas-sm90`).
  if (!compat.empty()) {
    if (!accum.empty()) {
      throw InputError("--compat " + compat + " with --accum " + accum +
                       ": choose one (the profile names an accumulation model)");
    }
    accum = compat_gemm_accum(compat_profile(compat));
  }
  for (const auto& [v, name] : {std::pair<std::string, const char*>{a_path, "--a"},
                                {b_path, "--b"},
                                {out, "--out"},
                                {a_fmt, "--a-format"},
                                {b_fmt, "--b-format"},
                                {out_fmt, "--out-format"},
                                {accum, "--accum"}}) {
    if (v.empty()) throw InputError(std::string(name) + ": required (exmy gemm --help)");
  }
  const gemm::OutFormat of = gemm::parse_out_format(out_fmt);
  const Device dev = parse_device(device);
  gemm::Operand A = gemm::read_operand(a_path, a_fmt, "A");
  gemm::Operand B = gemm::read_operand(b_path, b_fmt, "B");
  // Block scales (MX: E8M0 per 32 k, NVFP4: UE4M3 per 16 k), both operands or neither.
  if (block_a_path.empty() != block_b_path.empty()) {
    throw InputError(std::string(block_a_path.empty() ? "--block-scale-a" : "--block-scale-b") +
                     ": required with the other operand's block scales");
  }
  if (!block_a_path.empty()) {
    if (block == 0) block = block_format == "e4m3fn" ? 16 : 32;
    gemm::read_block_scales(block_a_path, block_format, block, A, "A");
    gemm::read_block_scales(block_b_path, block_format, block, B, "B");
  } else if (block != 0 || block_format != "e8m0fnu") {
    throw InputError("--block / --block-scale-format: only with --block-scale-a and -b");
  }
  const int bits = A.code_bits > B.code_bits ? A.code_bits : B.code_bits;
  gemm::AccumModel m = gemm::parse_accum_model(accum, bits);
  if (a_fmt == "tf32" || b_fmt == "tf32") m.truncate_tf32 = true;
  {
    // A library model (cublas-sm90) holds on the shapes it was verified on; elsewhere exmy says
    // which rule it applied (one line), and --strict refuses.
    const gemm::ShapeModel sm = gemm::operand_model(A, B, m);  // checks block-scale rules too
    if (!sm.measured) {
      const bool tf32 = A.type == "tf32" || B.type == "tf32";
      const std::string type = A.code_bits == 32 ? (tf32 ? "tf32" : "fp32") : A.type;
      const std::string note =
          gemm::unverified_note("exmy gemm", accum, sm, A.rows, B.rows, A.cols, type);
      if (strict) {
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
  rc.order = gemm::parse_scale_order(scale_order);
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
  if (!rows_path.empty()) rc.a_rows = read_scales(rows_path, A.rows, "--scale-a-rows");
  if (!cols_path.empty()) rc.b_cols = read_scales(cols_path, B.rows, "--scale-b-rows");
  const std::vector<std::uint32_t> c = dev == Device::cuda
                                           ? gpu::gemm_emulate(A, B, m, of, scale_a * scale_b, &rc)
                                           : gemm::gemm(A, B, m, of, scale_a * scale_b, &rc);
  const std::vector<std::size_t> shape{A.rows, B.rows};
  if (of == gemm::OutFormat::fp32) {
    // fp32 output is <f4: the bit patterns with the float dtype.
    io::NpyArray arr = io::make_npy(std::vector<std::uint32_t>(c), shape);
    arr.descr = "<f4";
    io::write_npy(out, arr);
  } else {
    std::vector<std::uint16_t> h(c.begin(), c.end());
    io::write_npy(out, io::make_npy(h, shape));
  }
  return 0;
}

}  // namespace

EXMY_COMMAND("gemm", run_gemm,
             "C = A B^T under an accumulation model (exact, fp32-seq, pairwise, sm80/sm90/sm100)");

}  // namespace exmy::cli
