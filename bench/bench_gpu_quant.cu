// GPU cast and quantization throughput against device-to-device copy bandwidth measured in the
// same process. Every benchmark reports bytes_per_second over the bytes it must move (each input
// read once, each output written once: copy counts read + write), and its `vs_copy` ratio is
// filled in by bench/gpu_quant_report.py from the JSON. Times are CUDA-event times of `kReps`
// back-to-back launches per iteration on 256M-element tensors of random (non-zero) data.
#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/gpu_bench.hpp"
#include "bench/common/sr_floor.hpp"
#include "gpu/cast/cast.hpp"
#include "gpu/cast/hw_cast.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/quant/bnb4bit.hpp"
#include "gpu/quant/quantize.hpp"
#include "gpu/quant/tile_path.hpp"
#include "sim/format/float_names.hpp"
#include "sim/quant/quantize.hpp"

namespace {

using namespace exmy;
using namespace exmy::gpu;

constexpr std::size_t kN = std::size_t{1} << 28;  // 256M elements
constexpr int kReps = 5;

void check(cudaError_t e, const char* what) {
  exmy::bench::cuda_ok(e, what);
}

// Random values: sign, exponent spread over 2^-20 .. 2^12, random mantissa (a hash of the index;
// never zeros, which could run faster than real data).
__global__ void fill_fp32(float* x, std::size_t n, std::uint32_t salt) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ salt;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const std::uint32_t e = 107 + (h >> 27);
    x[i] = __uint_as_float((h & 0x80000000u) | (e << 23) | (h & 0x7FFFFFu));
  }
}
__global__ void to_half(const float* x, std::uint16_t* y, std::size_t n, bool bf16) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = bf16 ? static_cast<std::uint16_t>(__float_as_uint(x[i]) >> 16)
                : __half_as_ushort(__float2half_rn(x[i]));
  }
}

struct Buffers {
  float* x32 = nullptr;
  std::uint16_t* x16 = nullptr;   // fp16 copy of x32
  std::uint16_t* xb16 = nullptr;  // bf16 copy of x32
  void* out = nullptr;            // up to 4 bytes per element
  float* state = nullptr;
  std::uint8_t* scales = nullptr;
  Buffers() {
    check(cudaMalloc(&x32, kN * 4), "malloc");
    check(cudaMalloc(&x16, kN * 2), "malloc");
    check(cudaMalloc(&xb16, kN * 2), "malloc");
    check(cudaMalloc(&out, kN * 4), "malloc");
    check(cudaMalloc(&state, kN / 16 * 4), "malloc");
    check(cudaMalloc(&scales, kN / 16), "malloc");
    fill_fp32<<<4096, 256>>>(x32, kN, 12345u);
    to_half<<<4096, 256>>>(x32, x16, kN, false);
    to_half<<<4096, 256>>>(x32, xb16, kN, true);
    check(cudaDeviceSynchronize(), "fill");
  }
  // The input tensor of type t (the same values in every type).
  const void* input(CastInput t) const {
    return t == CastInput::fp32   ? static_cast<const void*>(x32)
           : t == CastInput::fp16 ? static_cast<const void*>(x16)
                                  : static_cast<const void*>(xb16);
  }
};

Buffers& buffers() {
  static Buffers b;
  return b;
}

// Times `fn` (kReps launches per iteration, bench/common/gpu_bench.hpp); bytes = bytes moved per
// launch.
template <class Fn>
void timed(benchmark::State& state, double bytes, Fn fn) {
  exmy::bench::time_cuda(state, kReps, [&](long) { fn(); });
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes * state.iterations()));
  state.counters["elements"] = static_cast<double>(kN);
}

void BM_copy(benchmark::State& s) {
  Buffers& b = buffers();
  timed(s, 8.0 * kN,
        [&] { check(cudaMemcpyAsync(b.out, b.x32, kN * 4, cudaMemcpyDeviceToDevice), "copy"); });
}

void cast_bench(benchmark::State& s, CastInput in, FloatFormat to, Rounding r, bool fake,
                CastPath path = CastPath::automatic) {
  Buffers& b = buffers();
  const void* x = b.input(in);
  CastParams p;
  p.to = to;
  p.rounding = r;
  p.seed = 7;
  p.path = path;
  const double bytes = static_cast<double>(kN) * (input_bytes(in) + (fake ? 4 : code_bytes(to)));
  timed(s, bytes, [&] {
    if (fake) {
      cast_fake_quant(x, in, kN, static_cast<float*>(b.out), p);
    } else {
      cast_codes(x, in, kN, b.out, p);
    }
  });
}

// The floor of an sr:8 cast under SEMANTICS 3.2 (bench/common/sr_floor.hpp): the words alone, the
// words with the cast's bytes, the bytes alone. Bytes counted as an 8-bit cast of `in` moves them.
void floor_bench(benchmark::State& s, CastInput in, SrFloor what) {
  Buffers& b = buffers();
  const void* x = b.input(in);
  const double bytes =
      what == SrFloor::philox_only ? 0.0 : static_cast<double>(kN) * (input_bytes(in) + 1);
  timed(s, bytes, [&] { sr_floor(x, in, kN, static_cast<std::uint8_t*>(b.out), 7, what); });
}

void quant_bench(benchmark::State& s, CastInput in, std::size_t cols, const char* scheme,
                 const char* target, RoundMode mode, int sr_bits, double counted_bytes_per_elem,
                 void (*tune)(quant::Options&) = nullptr) {
  Buffers& b = buffers();
  const void* x = b.input(in);
  quant::Options o;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(target);
  o.mode = mode;
  o.sr_bits = sr_bits;
  if (tune != nullptr) tune(o);
  // The tensor scale of two-level NVFP4 goes to the state buffer (unused by byte-scale schemes).
  QuantizedOut q{static_cast<std::uint8_t*>(b.out), b.state, b.scales, b.state};
  // NVFP4 codes are stored packed, two per byte (the format's layout, as the CLI writes it).
  q.packed4 = o.scheme.kind == quant::Granularity::nvfp4;
  const std::size_t rows = kN / cols;
  s.counters["single_pass"] = quantize_is_single_pass(rows, cols, o) ? 1 : 0;
  timed(s, counted_bytes_per_elem * kN, [&] { quantize(x, in, rows, cols, o, q); });
}

// bitsandbytes' quantize_4bit (plain absmax; double quantization runs its second level through
// quantize and the offset on the host, not timed here): counted as the input, the packed codes
// (1/2 byte per element) and one fp32 absmax per block, the copy-equivalent traffic.
void bnb4_bench(benchmark::State& s, CastInput in, native::Bnb4Type type, std::size_t block) {
  Buffers& b = buffers();
  const void* x = b.input(in);
  quant::Bnb4Options o;
  o.type = type;
  o.block = block;
  const double bytes = static_cast<double>(kN) * (input_bytes(in) + 0.5 + 4.0 / block);
  timed(s, bytes, [&] { bnb4_quantize(x, in, kN, o, static_cast<std::uint8_t*>(b.out), b.state); });
}

const Rounding kRne{RoundMode::rne};
const Rounding kRtz{RoundMode::rtz};
const Rounding kSr8{RoundMode::sr, 8};

void register_all() {
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  reg("copy/fp32", BM_copy);
  const struct {
    const char* name;
    FloatFormat f;
  } fmts[] = {{"e4m3fn", formats::e4m3fn},     {"e5m2", formats::e5m2},
              {"e4m3fnuz", formats::e4m3fnuz}, {"e2m1fn", formats::e2m1fn},
              {"e8m0fnu", formats::e8m0fnu},   {"bf16", formats::bf16},
              {"fp16", formats::fp16}};
  for (const auto& f : fmts) {
    const FloatFormat ff = f.f;
    reg(std::string("cast/fp32/") + f.name + "/rne",
        [ff](benchmark::State& s) { cast_bench(s, CastInput::fp32, ff, kRne, false); });
    reg(std::string("cast/fp32/") + f.name + "/sr8",
        [ff](benchmark::State& s) { cast_bench(s, CastInput::fp32, ff, kSr8, false); });
  }
  reg("cast/fp32/e4m3fn/rtz",
      [](benchmark::State& s) { cast_bench(s, CastInput::fp32, formats::e4m3fn, kRtz, false); });
  reg("cast/bf16/e4m3fn/rne",
      [](benchmark::State& s) { cast_bench(s, CastInput::bf16, formats::e4m3fn, kRne, false); });
  reg("cast/fp16/e4m3fn/rne",
      [](benchmark::State& s) { cast_bench(s, CastInput::fp16, formats::e4m3fn, kRne, false); });
  reg("cast/bf16/e4m3fn/sr8",
      [](benchmark::State& s) { cast_bench(s, CastInput::bf16, formats::e4m3fn, kSr8, false); });
  reg("cast/fp16/e4m3fn/sr8",
      [](benchmark::State& s) { cast_bench(s, CastInput::fp16, formats::e4m3fn, kSr8, false); });
  reg("cast/bf16/e4m3fn/rtz",
      [](benchmark::State& s) { cast_bench(s, CastInput::bf16, formats::e4m3fn, kRtz, false); });
  reg("floor/philox_only",
      [](benchmark::State& s) { floor_bench(s, CastInput::fp32, SrFloor::philox_only); });
  for (const auto& [name, in] : {std::pair{"fp32", CastInput::fp32}, {"bf16", CastInput::bf16}}) {
    const CastInput i = in;
    reg(std::string("floor/") + name + "/philox_io",
        [i](benchmark::State& s) { floor_bench(s, i, SrFloor::philox_io); });
    reg(std::string("floor/") + name + "/io_only",
        [i](benchmark::State& s) { floor_bench(s, i, SrFloor::io_only); });
  }
  reg("fakequant/bf16/e4m3fn/rne",
      [](benchmark::State& s) { cast_bench(s, CastInput::bf16, formats::e4m3fn, kRne, true); });
  reg("fakequant/fp32/e4m3fn/sr8",
      [](benchmark::State& s) { cast_bench(s, CastInput::fp32, formats::e4m3fn, kSr8, true); });
  // Formats outside the presets (the lean path's generality; seed 003's e8m3..e8m7 and others):
  // every one under rne, rtz and sr:8, codes of 1 or 2 bytes.
  for (const char* name : {"e8m3", "e8m5", "e8m7", "e5m3", "e3m4b5", "e8m3fn", "e8m3fnuz",
                           "e4m3fnu", "e11m4", "e6m9b40"}) {
    const FloatFormat ff = *parse_float_format(name);
    for (const auto& [mode, r] : {std::pair{"rne", kRne}, {"rtz", kRtz}, {"sr8", kSr8}}) {
      const Rounding rr = r;
      reg(std::string("cast/fp32/") + name + "/" + mode,
          [ff, rr](benchmark::State& s) { cast_bench(s, CastInput::fp32, ff, rr, false); });
    }
  }
  reg("fakequant/fp32/e4m3fn/rne",
      [](benchmark::State& s) { cast_bench(s, CastInput::fp32, formats::e4m3fn, kRne, true); });
  reg("cast-generic/fp32/e4m3fn/rne", [](benchmark::State& s) {
    cast_bench(s, CastInput::fp32, formats::e4m3fn, kRne, false, CastPath::generic);
  });
  if (hw_fp8_available()) {
    reg("hw/fp32/e4m3/rne-satfinite", [](benchmark::State& s) {
      Buffers& b = buffers();
      timed(s, 5.0 * kN, [&] {
        hw_cast_fp32_to_fp8(b.x32, kN, static_cast<std::uint8_t*>(b.out), HwFp8::e4m3);
      });
    });
  }
  // Tensor-wise amax + scale + cast, counted as 5 B/elem (4 in, 1 out), as torch's anchor.
  reg("quant/tensor/fp32/e4m3fn/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "tensor", "e4m3fn", RoundMode::rne, 0, 5.0);
  });
  reg("quant/tensor/fp32/e4m3fn/sr8", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "tensor", "e4m3fn", RoundMode::sr, 8, 5.0);
  });
  // Row-wise int8 of fp16 rows of 4096, 3 B/elem (2 in, 1 out; the per-row state is 1/4096 B).
  reg("quant/rowwise/fp16/int8/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp16, 4096, "rowwise", "int8", RoundMode::rne, 0, 3.0);
  });
  reg("quant/colwise/fp16/int8/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp16, 4096, "colwise", "int8", RoundMode::rne, 0, 3.0);
  });
  // Block-wise codebook (bitsandbytes dynamic map), fp32 in: 5 B/elem.
  reg("quant/block4096/fp32/dynamic", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "block:4096", "dynamic", RoundMode::rne, 0, 5.0);
  });
  reg("quant/block256/fp32/dynamic", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "block:256", "dynamic", RoundMode::rne, 0, 5.0);
  });
  reg("quant/mx/fp32/e4m3fn/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32);
  });
  // The tensor-wise absmax pass alone (4 B/elem read): the bound of the two-pass schemes.
  reg("quant/amax/fp32/tensor", [](benchmark::State& s) {
    Buffers& b = buffers();
    timed(s, 4.0 * kN, [&] {
      group_absmax(b.x32, CastInput::fp32, kN / 4096, 4096, quant::parse_scheme("tensor"),
                   native::NanPolicy::propagate, b.state);
    });
  });
  // The column-wise and row-wise absmax passes alone on the int8 benchmarks' fp16 tensor (2 B/elem
  // read): the first read of the column-wise and transposing row-wise paths (the second is their
  // code pass), so that their two-read roofline splits into its passes.
  for (const char* sch : {"colwise", "rowwise"}) {
    reg(std::string("quant/amax/fp16/") + sch, [sch](benchmark::State& s) {
      Buffers& b = buffers();
      timed(s, 2.0 * kN, [&] {
        group_absmax(b.x16, CastInput::fp16, kN / 4096, 4096, quant::parse_scheme(sch),
                     native::NanPolicy::propagate, b.state);
      });
    });
  }
  for (const auto& [tn, ty] :
       {std::pair{"nf4", native::Bnb4Type::nf4}, std::pair{"fp4", native::Bnb4Type::fp4}}) {
    for (const auto& [in_name, in] :
         {std::pair{"fp32", CastInput::fp32}, std::pair{"bf16", CastInput::bf16},
          std::pair{"fp16", CastInput::fp16}}) {
      for (const std::size_t block : {std::size_t{64}, std::size_t{4096}}) {
        const native::Bnb4Type t = ty;
        const CastInput i = in;
        reg(std::string("quant/bnb4/") + in_name + "/" + tn + "/b" + std::to_string(block),
            [t, i, block](benchmark::State& s) { bnb4_bench(s, i, t, block); });
      }
    }
  }
  reg("quant/tensor/fp32/int8/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "tensor", "int8", RoundMode::rne, 0, 5.0);
  });
  // MX scale modes and the torchao arithmetic, and NVFP4: counted as the packed formats' bytes
  // (MX e4m3fn 4 + 1 + 1/32; NVFP4 4 in + 1/2 out + 1/16 scale), the copy-equivalent traffic.
  reg("quant/mx/fp32/e4m3fn/rne/ceil", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) { o.scale_mode = native::MxScaleMode::ceil; });
  });
  reg("quant/mx/fp32/e4m3fn/rne/rceil", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) { o.scale_mode = native::MxScaleMode::rceil; });
  });
  reg("quant/mx/fp32/e4m3fn/rne/even", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) { o.scale_mode = native::MxScaleMode::even; });
  });
  reg("quant/mx-torchao/fp32/e4m3fn/ceil", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) {
                  o.variant = native::CastVariant::torchao;
                  o.scale_mode = native::MxScaleMode::ceil;
                });
  });
  reg("quant/mx-torchao/fp32/e4m3fn/even", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) {
                  o.variant = native::CastVariant::torchao;
                  o.scale_mode = native::MxScaleMode::even;
                });
  });
  reg("quant/mx/fp32/e5m2/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e5m2", RoundMode::rne, 0, 5.0 + 1.0 / 32);
  });
  reg("quant/mx/fp32/e2m1fn/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e2m1fn", RoundMode::rne, 0, 5.0 + 1.0 / 32);
  });
  reg("quant/mx-torchao/fp32/e4m3fn/floor", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) { o.variant = native::CastVariant::torchao; });
  });
  reg("quant/mx-torchao/fp32/e4m3fn/rceil", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 5.0 + 1.0 / 32,
                [](quant::Options& o) {
                  o.variant = native::CastVariant::torchao;
                  o.scale_mode = native::MxScaleMode::rceil;
                });
  });
  reg("quant/nvfp4-torchao/fp32", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "nvfp4", "e2m1fn", RoundMode::rne, 0, 4.5625);
  });
  reg("quant/nvfp4-torchao-2level/fp32", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "nvfp4", "e2m1fn", RoundMode::rne, 0, 4.5625,
                [](quant::Options& o) { o.two_level = true; });
  });
  reg("quant/nvfp4-te-2level/fp32", [](benchmark::State& s) {
    quant_bench(s, CastInput::fp32, 4096, "nvfp4", "e2m1fn", RoundMode::rne, 0, 4.5625,
                [](quant::Options& o) {
                  o.variant = native::CastVariant::te;
                  o.two_level = true;
                });
  });
  reg("quant/mx/bf16/e4m3fn/rne", [](benchmark::State& s) {
    quant_bench(s, CastInput::bf16, 4096, "mx", "e4m3fn", RoundMode::rne, 0, 3.0 + 1.0 / 32);
  });
  reg("quant/transpose-rowwise/fp16/int8/rne", [](benchmark::State& s) {
    Buffers& b = buffers();
    quant::Options o;
    o.scheme = quant::parse_scheme("rowwise");
    o.target = quant::parse_target("int8");
    o.transpose = true;
    QuantizedOut q{static_cast<std::uint8_t*>(b.out), b.state, b.scales};
    timed(s, 3.0 * kN, [&] { quantize(b.x16, CastInput::fp16, kN / 4096, 4096, o, q); });
  });
  // 2-D block (tile) scaling, issue 32: DeepSeek-V3's 1x128 activation and 128x128 weight tiles
  // as DeepGEMM casts them (fp32 scales), and TransformerEngine's Float8BlockScaling (power-of-two
  // scales). Counted as input + one code byte + 4 B of scale per tile, the copy-equivalent
  // traffic (the fast tile kernels of gpu/quant/quantize_tile.cu read each tile once).
  for (const auto& [name, in] :
       {std::pair{"fp32", CastInput::fp32}, {"bf16", CastInput::bf16}, {"fp16", CastInput::fp16}}) {
    const CastInput i = in;
    reg(std::string("quant/tile1x128-deepgemm/") + name + "/e4m3fn", [i](benchmark::State& s) {
      quant_bench(s, i, 4096, "block:1x128", "e4m3fn", RoundMode::rne, 0,
                  input_bytes(i) + 1.0 + 4.0 / 128,
                  [](quant::Options& o) { o.variant = native::CastVariant::deepgemm; });
    });
    reg(std::string("quant/tile128x128-deepgemm/") + name + "/e4m3fn", [i](benchmark::State& s) {
      quant_bench(s, i, 4096, "block:128x128", "e4m3fn", RoundMode::rne, 0,
                  input_bytes(i) + 1.0 + 4.0 / 16384,
                  [](quant::Options& o) { o.variant = native::CastVariant::deepgemm; });
    });
    reg(std::string("quant/tile1x128-te/") + name + "/e4m3fn", [i](benchmark::State& s) {
      quant_bench(s, i, 4096, "block:1x128", "e4m3fn", RoundMode::rne, 0,
                  input_bytes(i) + 1.0 + 4.0 / 128,
                  [](quant::Options& o) { o.variant = native::CastVariant::te; });
    });
  }
  // The generic tile kernel on the same call (the fast path's baseline), set_tile_path's switch.
  reg("quant/tile1x128-deepgemm-generic/fp32/e4m3fn", [](benchmark::State& s) {
    set_tile_path(TilePath::generic);
    quant_bench(s, CastInput::fp32, 4096, "block:1x128", "e4m3fn", RoundMode::rne, 0,
                4.0 + 1.0 + 4.0 / 128,
                [](quant::Options& o) { o.variant = native::CastVariant::deepgemm; });
    set_tile_path(TilePath::automatic);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  benchmark::AddCustomContext("device", device_name());
  exmy::bench::add_gpu_context();
  benchmark::AddCustomContext("elements", std::to_string(kN));
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
