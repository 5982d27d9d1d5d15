// The GEMM emulation and the int8 product kernels (gpu/gemm/gemm_emulation.hpp).
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "gpu/gemm/gemm_tiled.hpp"
#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/gemm_dot.hpp"
#include "sim/native/mask.hpp"

namespace exmy::gpu {

namespace {

// Block scales in device memory: A's rows x nb row-major, B's transposed (nb x N, like bt).
struct KernelBlockScales {
  const double* a = nullptr;
  const double* bt = nullptr;
  std::size_t nb = 0;
  int block = 0, emin_a = -127, emin_b = -127;
};

// Tile scales in device memory (SEMANTICS 15.7): A's ceil(M / ra) x kb and B's ceil(N / rb) x kb
// fp32 values, row-major as the operands hold them.
struct KernelTileScales {
  const float* a = nullptr;
  const float* b = nullptr;
  std::size_t kb = 0, ra = 1, rb = 1;
  int block = 128;
};

// One thread per output element: i = row of A, j = row of B. B is stored transposed (K x N) so
// that the threads of a warp (consecutive j) read consecutive addresses; a thread reads its row
// of A (the same for the whole warp: a broadcast). rp_chunk > 0: rp with a 16-bit output
// (SEMANTICS 15.2), m the chunks' model: each chunk of rp_chunk k accumulated from +0, its fp32
// code rounded to the output format and added in fp32 in order from +0, as gemm::gemm_rows
// computes each output (no block or tile scales: the host refused them). only != null: the
// outputs the tiled kernel left to this one (only[i N + j] = 1), the others untouched.
__global__ void k_gemm_emulate(const double* __restrict__ a, const double* __restrict__ bt,
                               std::size_t M, std::size_t N, std::size_t K, int emin_a, int emin_b,
                               native::DotModel m, KernelBlockScales ks, KernelTileScales kt,
                               GemmEpilogue ep, std::size_t rp_chunk,
                               const std::uint8_t* __restrict__ only,
                               std::uint32_t* __restrict__ c) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t i = blockIdx.y * static_cast<std::size_t>(blockDim.y) + threadIdx.y;
  if (i >= M || j >= N) return;
  if (only != nullptr && only[i * N + j] == 0) return;
  native::DotBlockScales bs;
  if (ks.a != nullptr) {
    bs = {ks.a + i * ks.nb, 1, ks.bt + j, N, ks.block, ks.emin_a, ks.emin_b};
  }
  native::DotTileScales ts;
  if (kt.a != nullptr) ts = {kt.a + (i / kt.ra) * kt.kb, kt.b + (j / kt.rb) * kt.kb, kt.block};
  // One call of the model (one inlined copy): the whole K, or each rp chunk in order (the
  // scales are null with rp).
  const std::size_t P = rp_chunk == 0 ? K : rp_chunk;
  float acc = 0.0f;
  for (std::size_t k0 = 0;; k0 += P) {
    const std::size_t k1 = K - k0 < P ? K : k0 + P;
    const float part =
        native::dot_model_fp32(a + i * K + k0, 1, bt + k0 * N + j, N, k1 - k0, emin_a, emin_b, m,
                               ks.a != nullptr ? &bs : nullptr, kt.a != nullptr ? &ts : nullptr);
    if (rp_chunk == 0) {
      acc = part;
      break;
    }
    acc = native::dot_add_rounded_part(acc, native::dot_out_code(part, 1.0f, 0), ep.out);
    if (k1 >= K) break;
  }
  c[i * N + j] = gemm_epilogue(acc, i, j, ep);
}

// The dtype value of an fp32 value (out 0: itself).
__device__ float to_out(float v, int out) {
  if (out == 0) return v;
  constexpr FloatFormat kF32 = formats::fp32;
  constexpr FloatFormat kBf16 = formats::bf16;
  constexpr FloatFormat kF16 = formats::fp16;
  const FloatFormat& f = out == 1 ? kBf16 : kF16;
  const std::uint64_t code = native::convert(kF32, f, Rounding{}, native::f32_bits(v), 0).code;
  return static_cast<float>(native::to_double(f, code));
}

__global__ void k_int8_product(const std::int8_t* __restrict__ a, const float* __restrict__ sa,
                               const std::int8_t* __restrict__ bt, const float* __restrict__ sb,
                               bool b_tensor, std::size_t M, std::size_t N, std::size_t K,
                               native::DequantOrder order, int out, float* __restrict__ c) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t i = blockIdx.y * static_cast<std::size_t>(blockDim.y) + threadIdx.y;
  if (i >= M || j >= N) return;
  const std::int32_t acc = native::dot_int8(a + i * K, 1, bt + j, static_cast<std::int64_t>(N),
                                            static_cast<std::int64_t>(K));
  const float v = native::dequant_int8_product(acc, sa[i], b_tensor ? sb[0] : sb[j], order);
  c[i * N + j] = to_out(v, out);
}

// in and res may be the same buffer (each element read, then written, by one thread).
__global__ void k_mask_round(const float* in, std::size_t n, int mask_e, int mask_m,
                             MaskOuter outer, MaskInner inner, int out, float* res) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float v = in[i];
    if (mask_e > 0) {
      v = native::f32_from_bits(exmy::mask_fp32(native::f32_bits(v), mask_e, mask_m, outer, inner));
    }
    res[i] = to_out(v, out);
  }
}

template <class T>
std::vector<T> transposed(const std::vector<T>& v, std::size_t rows, std::size_t cols) {
  std::vector<T> t(v.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

// out (cols x rows) = in (rows x cols) transposed, on the device (the host transposed B before:
// the same doubles in the same places).
__global__ void k_transpose(const double* __restrict__ in, std::size_t rows, std::size_t cols,
                            double* __restrict__ out) {
  const std::size_t n = rows * cols;
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = t / cols, c = t % cols;
    out[c * rows + r] = in[t];
  }
}

// dst[r drs + c dcs] = the double of src[r rs + c cs] (TF32-truncated when tf32), for an operand
// already on the device: what upload_values writes from the host values.
__global__ void k_stage_values(const float* __restrict__ src, std::size_t rs, std::size_t cs,
                               std::size_t rows, std::size_t cols, bool tf32, int mode,
                               double* __restrict__ dst, std::size_t drs, std::size_t dcs) {
  const std::size_t n = rows * cols;
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = t / cols, c = t % cols;
    float v = src[r * rs + c * cs];
    if (tf32) v = native::dot_tf32(v, mode);
    dst[r * drs + c * dcs] = v;
  }
}

// The operands' tile scales in device buffers, for the kernel.
struct DeviceTileScales {
  DeviceBuffer a, b;
  KernelTileScales k;
  DeviceTileScales(const gemm::Operand& oa, const gemm::Operand& ob)
      : a(oa.tile_scales.empty() ? nullptr : oa.tile_scales.data(),
          oa.tile_scales.size() * sizeof(float)),
        b(ob.tile_scales.empty() ? nullptr : ob.tile_scales.data(),
          ob.tile_scales.size() * sizeof(float)) {
    if (oa.tile_cols == 0) return;  // operand_model checked that both sides have tiles
    k.a = a.as<float>();
    k.b = b.as<float>();
    k.kb = (oa.cols + oa.tile_cols - 1) / oa.tile_cols;
    k.ra = oa.tile_rows;
    k.rb = ob.tile_rows;
    k.block = static_cast<int>(oa.tile_cols);
  }
};

// The checks and the kernel model of a GEMM (host only: nothing is staged yet).
native::DotModel checked_model(const gemm::Operand& a, const gemm::Operand& b,
                               const gemm::AccumModel& model, gemm::OutFormat out,
                               gemm::AccumModel* checked) {
  if (model.kind == gemm::AccumKind::exact) {
    throw InputError(
        "--accum exact: the CPU reference only (MPFR); the GPU runs fp32-seq, "
        "pairwise and hw models");
  }
  if (a.cols != b.cols) {
    throw InputError("A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                     " and B is " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": expected the same K (C = A B^T)");
  }
  *checked = gemm::operand_model(a, b, model, out).model;
  return gemm::dot_model(*checked);
}

// Host staging of the operands, a block of rows at a time (issue 36's memory bound, docs/
// SEMANTICS.md 11.0): each block is decoded to doubles (TF32-truncated where the model
// truncates) into a host buffer of about 4 MiB and copied to its place in the device buffer, so
// the host holds the operands' stored form (a mapped file) and one block, not a double copy of A
// (2 GiB for a 1 GiB fp32 A) and two of B. The device holds what the kernel reads, as before: A
// and B^T as doubles, the block scales as doubles (B's transposed).
struct Staged {
  DeviceBuffer a, bt, scale_a, scale_bt;
  KernelBlockScales k;

  // da / db: that operand's values already on the device (staged there by a kernel).
  Staged(const gemm::Operand& oa, const gemm::Operand& ob, const gemm::AccumModel& m,
         const DeviceValues* da = nullptr, const DeviceValues* db = nullptr)
      : a(oa.rows * oa.cols * sizeof(double)),
        bt(ob.rows * ob.cols * sizeof(double)),
        scale_a(oa.scale_block != 0 ? oa.rows * (oa.cols / oa.scale_block) * sizeof(double) : 0),
        scale_bt(oa.scale_block != 0 ? ob.rows * (ob.cols / ob.scale_block) * sizeof(double) : 0) {
    if (da != nullptr) {
      from_device(*da, oa, m, a.as<double>(), oa.cols, 1);
    } else {
      upload_values(oa, m, a.as<double>());
    }
    if (db != nullptr) {
      from_device(*db, ob, m, bt.as<double>(), 1, ob.rows);  // B^T: (j, k) to k N + j
    } else {
      const DeviceBuffer b(ob.rows * ob.cols * sizeof(double));
      upload_values(ob, m, b.as<double>());
      transpose(b.as<double>(), ob.rows, ob.cols, bt.as<double>());
    }
    if (oa.scale_block == 0) return;  // operand_model checked that both sides have the same block
    upload_scales(oa, scale_a.as<double>());
    {
      const std::size_t nb = ob.cols / ob.scale_block;
      const DeviceBuffer sb(ob.rows * nb * sizeof(double));
      upload_scales(ob, sb.as<double>());
      transpose(sb.as<double>(), ob.rows, nb, scale_bt.as<double>());
    }
    k.a = scale_a.as<double>();
    k.bt = scale_bt.as<double>();
    k.nb = oa.cols / oa.scale_block;
    k.block = static_cast<int>(oa.scale_block);
    k.emin_a = oa.scale_emin;
    k.emin_b = ob.scale_emin;
  }

  static std::size_t block_rows(std::size_t cols) {
    return std::max<std::size_t>(1, (std::size_t{1} << 19) / std::max<std::size_t>(cols, 1));
  }
  static void upload_values(const gemm::Operand& o, const gemm::AccumModel& m, double* dst) {
    const std::size_t K = o.cols, T = block_rows(K);
    std::vector<double> buf(std::min(T, o.rows) * K);
    const int mode = static_cast<int>(m.tf32_round);
    for (std::size_t r0 = 0; r0 < o.rows && K > 0; r0 += T) {
      const std::size_t r1 = std::min(o.rows, r0 + T), n = (r1 - r0) * K;
      o.rows_into(r0, r1, buf.data());  // the values of Operand::values(), rows [r0, r1)
      if (m.truncate_tf32 && o.code_bits == 32) {
        for (std::size_t t = 0; t < n; ++t)
          buf[t] = native::dot_tf32(static_cast<float>(buf[t]), mode);
      }
      cuda_check(cudaMemcpy(dst + r0 * K, buf.data(), n * sizeof(double), cudaMemcpyHostToDevice),
                 "upload");
    }
  }
  static void from_device(const DeviceValues& d, const gemm::Operand& o, const gemm::AccumModel& m,
                          double* dst, std::size_t drs, std::size_t dcs) {
    const std::size_t n = o.rows * o.cols;
    if (n == 0) return;
    k_stage_values<<<grid_for(n, 1), kThreads>>>(d.values, d.rs, d.cs, o.rows, o.cols,
                                                 m.truncate_tf32 && o.code_bits == 32,
                                                 static_cast<int>(m.tf32_round), dst, drs, dcs);
    cuda_check_launch("k_stage_values");
  }
  static void upload_scales(const gemm::Operand& o, double* dst) {
    const std::size_t nb = o.cols / o.scale_block, n = o.rows * nb;
    const std::size_t T = std::size_t{1} << 19;
    std::vector<double> buf(std::min(T, n));
    for (std::size_t i0 = 0; i0 < n; i0 += T) {
      const std::size_t i1 = std::min(n, i0 + T);
      for (std::size_t i = i0; i < i1; ++i) buf[i - i0] = o.scale(i);  // Operand::scale_values()
      cuda_check(
          cudaMemcpy(dst + i0, buf.data(), (i1 - i0) * sizeof(double), cudaMemcpyHostToDevice),
          "upload");
    }
  }
  static void transpose(const double* in, std::size_t rows, std::size_t cols, double* out) {
    if (rows * cols == 0) return;
    const std::size_t blocks = std::min<std::size_t>(65535, (rows * cols + 255) / 256);
    k_transpose<<<static_cast<unsigned>(blocks), 256>>>(in, rows, cols, out);
    cuda_check_launch("k_transpose");
  }
};

const dim3 kTile(32, 8);
dim3 grid2d(std::size_t rows, std::size_t cols) {
  return dim3(static_cast<unsigned>((cols + kTile.x - 1) / kTile.x),
              static_cast<unsigned>((rows + kTile.y - 1) / kTile.y));
}

// The one place that chooses the kernel: the tiled fast path (gpu/gemm/gemm_tiled.cu) for the
// models and data it takes, the generic one-thread-per-output kernel for everything else and
// for the outputs the tiled kernel flags. Returns whether the tiled kernel ran.
bool run_gemm(const Staged& st, std::size_t M, std::size_t N, std::size_t K, int emin_a, int emin_b,
              const native::DotModel& dm, const KernelTileScales& kt, const GemmEpilogue& ep,
              std::size_t rp_chunk, GemmPath path, std::uint32_t* c) {
  const bool fast_model =
      st.k.a == nullptr && kt.a == nullptr && rp_chunk == 0 && tiled_model_ok(dm, K);
  if (path != GemmPath::generic && fast_model) {
    // The tiled kernel's flags (M x N bytes): kept between calls, grown when a call needs more,
    // like gemm_tiled's scratch (a cudaMalloc / cudaFree pair per call was host time inside a
    // timed tall-K run, the free a device synchronisation: issue 37). Held until the
    // synchronisation below.
    static std::mutex only_mu;
    static std::unique_ptr<DeviceBuffer> only_buf;
    static std::size_t only_bytes = 0;
    static int only_dev = -1;
    const std::lock_guard<std::mutex> lock(only_mu);
    if (M * N > only_bytes || current_device() != only_dev) {
      only_buf.reset();
      only_bytes = 0;
      only_buf = std::make_unique<DeviceBuffer>(M * N);
      only_bytes = M * N;
      only_dev = current_device();
    }
    auto* only = only_buf->as<std::uint8_t>();
    std::size_t flagged = 0;
    if (gemm_tiled(st.a.as<double>(), st.bt.as<double>(), M, N, K, emin_a, emin_b, dm, ep, c, only,
                   &flagged)) {
      if (flagged > 0) {
        k_gemm_emulate<<<grid2d(M, N), kTile>>>(st.a.as<double>(), st.bt.as<double>(), M, N, K,
                                                emin_a, emin_b, dm, st.k, kt, ep, rp_chunk, only,
                                                c);
        cuda_check_launch("k_gemm_emulate");
      }
      cuda_check(cudaDeviceSynchronize(), "k_gemm_tiled");
      return true;
    }
  }
  k_gemm_emulate<<<grid2d(M, N), kTile>>>(st.a.as<double>(), st.bt.as<double>(), M, N, K, emin_a,
                                          emin_b, dm, st.k, kt, ep, rp_chunk, nullptr, c);
  cuda_check_launch("k_gemm_emulate");
  cuda_check(cudaDeviceSynchronize(), "k_gemm_emulate");
  return false;
}

}  // namespace

std::vector<std::uint32_t> gemm_emulate(const gemm::Operand& a, const gemm::Operand& b,
                                        const gemm::AccumModel& m, gemm::OutFormat out,
                                        double alpha, const gemm::RowColScales* scales) {
  std::vector<std::uint32_t> c;
  gemm_emulate_rows(a, b, m, out, alpha, scales,
                    [&](std::size_t i0, std::size_t i1, const std::uint32_t* rows) {
                      if (c.empty()) c.resize(a.rows * b.rows);
                      std::copy(rows, rows + (i1 - i0) * b.rows, c.begin() + i0 * b.rows);
                    });
  c.resize(a.rows * b.rows);
  return c;
}

void gemm_emulate_rows(const gemm::Operand& a, const gemm::Operand& b, const gemm::AccumModel& m,
                       gemm::OutFormat out, double alpha, const gemm::RowColScales* scales,
                       const RowSink& sink) {
  gemm_emulate_rows(a, nullptr, b, nullptr, m, out, alpha, scales, sink);
}

void gemm_emulate_rows(const gemm::Operand& a, const DeviceValues* da, const gemm::Operand& b,
                       const DeviceValues* db, const gemm::AccumModel& m, gemm::OutFormat out,
                       double alpha, const gemm::RowColScales* scales, const RowSink& sink) {
  gemm::AccumModel checked;
  native::DotModel dm = checked_model(a, b, m, out, &checked);
  // rp with a 16-bit output (SEMANTICS 15.2): the chunks' model runs in the kernel, each output's
  // chunks added there (it was gemm::gemm_rounded_parts on the host: M x N fp32 partial sums and
  // a double copy of each K-slice of the operands).
  std::size_t rp_chunk = 0;
  if (checked.rp && out != gemm::OutFormat::fp32) {
    if (a.scale_block != 0 || b.scale_block != 0 || a.tile_cols != 0 || b.tile_cols != 0) {
      throw InputError("--accum " + checked.name +
                       ": rp (16-bit split-K partials) with block scales");
    }
    const gemm::AccumModel part = gemm::rounded_part_model(checked);
    (void)gemm::operand_model(a, b, part, gemm::OutFormat::fp32);  // the chunks' GEMMs check these
    dm = gemm::dot_model(part);
    rp_chunk = static_cast<std::size_t>(checked.chunk);
  }
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  gemm::check_scales(scales, M, N);
  const bool rows = scales != nullptr && !scales->a_rows.empty();
  const bool cols = scales != nullptr && !scales->b_cols.empty();
  if (M * N == 0) return;
  const Staged st(a, b, checked, da, db);
  const DeviceBuffer dc(M * N * sizeof(std::uint32_t));
  const DeviceBuffer dsa(rows ? scales->a_rows.data() : nullptr, rows ? M * sizeof(float) : 0);
  const DeviceBuffer dsb(cols ? scales->b_cols.data() : nullptr, cols ? N * sizeof(float) : 0);
  const DeviceTileScales dts(a, b);
  GemmEpilogue ep;
  ep.alpha = static_cast<float>(alpha);
  ep.sa = dsa.as<float>();
  ep.sb = dsb.as<float>();
  ep.order = scales != nullptr ? static_cast<int>(scales->order) : 0;
  ep.out = static_cast<int>(out);
  run_gemm(st, M, N, K, a.emin, b.emin, dm, dts.k, ep, rp_chunk, GemmPath::automatic,
           dc.as<std::uint32_t>());
  // C to the host a block of rows at a time (about 2 MiB), each handed to the sink.
  const std::size_t T = std::max<std::size_t>(1, (std::size_t{1} << 19) / N);
  std::vector<std::uint32_t> buf(std::min(T, M) * N);
  for (std::size_t i0 = 0; i0 < M; i0 += T) {
    const std::size_t i1 = std::min(M, i0 + T);
    cuda_check(cudaMemcpy(buf.data(), dc.as<std::uint32_t>() + i0 * N,
                          (i1 - i0) * N * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
               "download");
    sink(i0, i1, buf.data());
  }
}

struct PreparedGemm::Impl {
  native::DotModel dm;
  std::size_t M, N, K;
  int emin_a, emin_b;
  Staged st;
  DeviceBuffer dc;
  DeviceTileScales dts;
  GemmEpilogue ep;
  Impl(const gemm::Operand& a, const gemm::Operand& b, const gemm::AccumModel& checked,
       const native::DotModel& d, gemm::OutFormat out)
      : dm(d),
        M(a.rows),
        N(b.rows),
        K(a.cols),
        emin_a(a.emin),
        emin_b(b.emin),
        st(a, b, checked),
        dc(a.rows * b.rows * sizeof(std::uint32_t)),
        dts(a, b) {
    ep.out = static_cast<int>(out);
  }
};

PreparedGemm::PreparedGemm(const gemm::Operand& a, const gemm::Operand& b,
                           const gemm::AccumModel& m, gemm::OutFormat out) {
  gemm::AccumModel checked;
  const native::DotModel dm = checked_model(a, b, m, out, &checked);
  impl_ = std::make_unique<Impl>(a, b, checked, dm, out);
}
PreparedGemm::~PreparedGemm() = default;

bool PreparedGemm::run(GemmPath path) {
  Impl& g = *impl_;
  if (g.M * g.N == 0) return false;
  return run_gemm(g.st, g.M, g.N, g.K, g.emin_a, g.emin_b, g.dm, g.dts.k, g.ep, 0, path,
                  g.dc.as<std::uint32_t>());
}

std::vector<std::uint32_t> PreparedGemm::codes() const {
  return impl_->dc.download<std::uint32_t>(impl_->M * impl_->N);
}

double gemm_emulate_time_ms(const gemm::Operand& a, const gemm::Operand& b,
                            const gemm::AccumModel& m, gemm::OutFormat out, int reps, GemmPath path,
                            bool* tiled) {
  PreparedGemm g(a, b, m, out);
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    cuda_check(cudaEventRecord(e0), "cudaEventRecord");
    // Everything the GEMM runs on the staged operands: for the tiled path its stats and encode
    // passes, the tiled kernel, a combine and the generic kernel for flagged outputs.
    const bool t = g.run(path);
    if (tiled != nullptr) *tiled = t;
    cuda_check(cudaEventRecord(e1), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ts = 0;
    cuda_check(cudaEventElapsedTime(&ts, e0, e1), "cudaEventElapsedTime");
    if (r > 0) ms.push_back(ts);  // the first launch warms up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<std::uint32_t> gemm_emulate_device_codes(const gemm::Operand& a, const gemm::Operand& b,
                                                     const gemm::AccumModel& m, gemm::OutFormat out,
                                                     GemmPath path, bool* tiled) {
  PreparedGemm g(a, b, m, out);
  const bool t = g.run(path);
  if (tiled != nullptr) *tiled = t;
  return g.codes();
}

void int8_product_device(const std::int8_t* a, const float* a_state, std::size_t rows,
                         const std::int8_t* bt, const float* b_state, bool b_tensor,
                         std::size_t cols, std::size_t k, native::DequantOrder order,
                         int out_format, float* c) {
  if (rows * cols == 0) return;
  k_int8_product<<<grid2d(rows, cols), kTile>>>(a, a_state, bt, b_state, b_tensor, rows, cols, k,
                                                order, out_format, c);
  cuda_check_launch("k_int8_product");
  cuda_check(cudaDeviceSynchronize(), "k_int8_product");
}

std::vector<float> int8_product(const std::vector<std::int8_t>& a,
                                const std::vector<float>& a_state, std::size_t rows,
                                const std::vector<std::int8_t>& b,
                                const std::vector<float>& b_state, std::size_t cols, std::size_t k,
                                native::DequantOrder order, int out_format) {
  if (a.size() != rows * k || b.size() != cols * k || a_state.size() != rows ||
      (b_state.size() != cols && b_state.size() != 1)) {
    throw InputError("int8_product: operand or state sizes do not match the shape");
  }
  std::vector<float> c(rows * cols);
  if (c.empty()) return c;
  const std::vector<std::int8_t> bt = transposed(b, cols, k);
  const DeviceBuffer da(a.data(), a.size()), db(bt.data(), bt.size());
  const DeviceBuffer dsa(a_state.data(), a_state.size() * sizeof(float));
  const DeviceBuffer dsb(b_state.data(), b_state.size() * sizeof(float));
  const DeviceBuffer dc(c.size() * sizeof(float));
  int8_product_device(da.as<std::int8_t>(), dsa.as<float>(), rows, db.as<std::int8_t>(),
                      dsb.as<float>(), b_state.size() == 1 && cols != 1, cols, k, order, out_format,
                      dc.as<float>());
  dc.download(c.data(), c.size() * sizeof(float));
  return c;
}

void mask_round_device(const float* in, std::size_t n, int mask_e, int mask_m, MaskOuter outer,
                       MaskInner inner, int out_format, float* out) {
  if (n == 0) return;
  k_mask_round<<<grid_for(n, 1), kThreads>>>(in, n, mask_e, mask_m, outer, inner, out_format, out);
  cuda_check_launch("k_mask_round");
  cuda_check(cudaDeviceSynchronize(), "k_mask_round");
}

std::vector<float> mask_round(const std::vector<float>& v, int mask_e, int mask_m, MaskOuter outer,
                              MaskInner inner, int out_format) {
  std::vector<float> r(v.size());
  if (r.empty()) return r;
  const DeviceBuffer din(v.data(), v.size() * sizeof(float));
  const DeviceBuffer dout(v.size() * sizeof(float));
  mask_round_device(din.as<float>(), v.size(), mask_e, mask_m, outer, inner, out_format,
                    dout.as<float>());
  dout.download(r.data(), r.size() * sizeof(float));
  return r;
}

}  // namespace exmy::gpu
