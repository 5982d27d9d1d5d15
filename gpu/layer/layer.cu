// The GPU engine of the layers (gpu/layer/layer.hpp): each primitive of layer::LayerEngine as
// CUDA kernels; layer::run_layer (sim/layer/linear_layer.cpp) is the algorithm, run unchanged.
//
// The forms run_layer_rows is written in (issue 36's memory bound, docs/SEMANTICS.md 11.0): an
// input view is staged to the device a block of rows at a time (about 2 MiB of fp32 values on
// the host), a prepared operand (fake float8, int8 round trip, mask) is computed and kept in
// device memory, an int8 product quantizes both operands on the device, and every product hands
// its output back a block of rows at a time. The host holds the mapped inputs, one block and the
// CUDA runtime. Each kernel is the one the vector primitives below launch on a contiguous copy,
// in the same order on the same fp32 values, so the bits are theirs (and the CPU's:
// tests/gpu/gemm_layer_test.cpp).
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "gpu/host_arrays.hpp"
#include "gpu/layer/layer.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::gpu::layer {

namespace {

using exmy::layer::DType;
using exmy::layer::Gran;
using exmy::layer::Int8;
using exmy::layer::Int8Operand;
using exmy::layer::MatView;
using exmy::layer::OpView;

// The kernels' output selector: 0 fp32, 1 bf16, 2 fp16 (gemm::OutFormat's values).
int out_code(DType d) {
  return static_cast<int>(exmy::layer::out_format(d));
}

// Rows of a block staged or handed back: about 2^19 values (2 MiB of fp32).
std::size_t block_rows(std::size_t cols) {
  return std::max<std::size_t>(1, (std::size_t{1} << 19) / std::max<std::size_t>(cols, 1));
}

// out (cols x rows) = in (rows x cols) transposed.
template <class T>
__global__ void k_transpose(const T* __restrict__ in, std::size_t rows, std::size_t cols,
                            T* __restrict__ out) {
  const std::size_t n = rows * cols;
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = t / cols, c = t % cols;
    out[c * rows + r] = in[t];
  }
}

template <class T>
void transpose(const T* in, std::size_t rows, std::size_t cols, T* out) {
  if (rows * cols == 0) return;
  k_transpose<T><<<grid_for(rows * cols, 1), kThreads>>>(in, rows, cols, out);
  cuda_check_launch("k_transpose");
}

void sync(const char* what) {
  cuda_check(cudaGetLastError(), what);
  cuda_check(cudaDeviceSynchronize(), what);
}

// A rows x cols matrix of fp32 values in device memory, row-major.
struct DeviceMat {
  std::size_t rows, cols;
  DeviceBuffer buf;
  DeviceMat(std::size_t r, std::size_t c) : rows(r), cols(c), buf(r * c * sizeof(float)) {}
  float* data() const { return buf.as<float>(); }
};

// Rows of a view (the values layer::rows_f32 reads: 16-bit codes through their table) into
// dst (rows x cols, row-major), a block of rows at a time through one host buffer.
void stage_rows(const MatView& v, float* dst) {
  const std::size_t T = block_rows(v.cols);
  std::vector<float> buf(std::min(T, v.rows) * v.cols);
  for (std::size_t r0 = 0; r0 < v.rows; r0 += T) {
    const std::size_t r1 = std::min(v.rows, r0 + T), n = (r1 - r0) * v.cols;
    exmy::layer::rows_f32(v, r0, r1, buf.data());
    cuda_check(cudaMemcpy(dst + r0 * v.cols, buf.data(), n * sizeof(float), cudaMemcpyHostToDevice),
               "upload");
  }
}

// The view's elements on the device, row-major (contiguous(v) there). A transposed view of a
// row-major matrix is staged as that matrix (its memory in order) and transposed on the device.
std::unique_ptr<DeviceMat> to_device(const MatView& v) {
  auto d = std::make_unique<DeviceMat>(v.rows, v.cols);
  if (v.rows * v.cols == 0) return d;
  if (v.rs == 1 && v.cs != 1) {
    const MatView u = exmy::layer::transposed(v);
    const DeviceBuffer t(u.rows * u.cols * sizeof(float));
    stage_rows(u, t.as<float>());
    transpose(t.as<float>(), u.rows, u.cols, d->data());
    sync("k_transpose");
  } else {
    stage_rows(v, d->data());
  }
  return d;
}

// quantize's outputs in device memory, allocated as gpu::quantize_host allocates them.
struct DeviceQuantized {
  std::size_t groups;
  bool bytes;
  DeviceBuffer codes, state, scales, tensor;
  DeviceQuantized(std::size_t n, std::size_t g, bool byte_scales, bool two_level)
      : groups(g),
        bytes(byte_scales),
        codes(n),
        state(byte_scales ? 0 : g * sizeof(float)),
        scales(byte_scales ? g : 0),
        tensor(two_level ? sizeof(float) : 0) {}
};

// quantize_host's kernels on a matrix already on the device.
std::unique_ptr<DeviceQuantized> quantize_device(const DeviceMat& x, const quant::Options& opt) {
  auto q = std::make_unique<DeviceQuantized>(x.rows * x.cols,
                                             quant::group_count(opt.scheme, x.rows, x.cols),
                                             quant::make_plan(opt).byte_scales(), opt.two_level);
  if (x.rows * x.cols == 0) return q;
  quantize(x.data(), CastInput::fp32, x.rows, x.cols, opt,
           QuantizedOut{q->codes.as<std::uint8_t>(), q->state.as<float>(),
                        q->scales.as<std::uint8_t>(), q->tensor.as<float>()});
  sync("quantize kernels");
  return q;
}

// dequantize_host's kernel into out (x's rows x cols fp32), then mask_round(0, 0) to the dtype:
// the vector primitives' round trips (fake_float8, dequantize_int8_rows).
void round_trip(const DeviceMat& x, const quant::Options& opt, DType d, float* out) {
  const std::size_t n = x.rows * x.cols;
  if (n == 0) return;
  const std::unique_ptr<DeviceQuantized> q = quantize_device(x, opt);
  const float tensor_scale = opt.two_level ? q->tensor.download<float>(1)[0] : 1.0f;
  dequantize(q->codes.as<std::uint8_t>(), q->state.as<float>(), q->scales.as<std::uint8_t>(),
             x.rows, x.cols, opt, out, nullptr, tensor_scale);
  sync("dequantize kernel");
  mask_round_device(out, n, 0, 0, MaskOuter::clamp, MaskInner::min, out_code(d), out);
}

// A product's output rows (device, rows x cols fp32) handed to the sink a block at a time.
void hand_back(const float* c, std::size_t rows, std::size_t cols,
               const exmy::layer::RowSink& out) {
  if (rows * cols == 0) return;
  const std::size_t T = block_rows(cols);
  std::vector<float> buf(std::min(T, rows) * cols);
  for (std::size_t i0 = 0; i0 < rows; i0 += T) {
    const std::size_t i1 = std::min(rows, i0 + T);
    cuda_check(cudaMemcpy(buf.data(), c + i0 * cols, (i1 - i0) * cols * sizeof(float),
                          cudaMemcpyDeviceToHost),
               "download");
    out(i0, i1, buf.data());
  }
}

class GpuEngine final : public exmy::layer::LayerEngine {
 public:
  Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols, Gran gran,
                     native::ScaleOrder order) override {
    return exmy::layer::int8_of(quantize_host(x.data(), CastInput::fp32, rows, cols,
                                              exmy::layer::int8_options(gran, order)));
  }

  std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b, std::size_t cols,
                                  std::size_t k, native::DequantOrder order, DType d) override {
    return gpu::int8_product(a.codes, a.state, rows, b.codes, b.state, cols, k, order, out_code(d));
  }

  std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                          DType d) override {
    quant::Quantized qq;
    qq.shape = {rows, cols};
    qq.state_shape = {rows};
    qq.codes.resize(q.codes.size());
    std::memcpy(qq.codes.data(), q.codes.data(), q.codes.size());
    qq.state = q.state;
    const std::vector<float> v = dequantize_host(
        qq, rows, cols, exmy::layer::int8_options(Gran::row, native::ScaleOrder::div_mul));
    return mask_round(v, 0, 0, MaskOuter::clamp, MaskInner::min, out_code(d));
  }

  std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                 Gran gran, const FloatFormat& f, DType d) override {
    const quant::Options opt = exmy::layer::float8_options(gran, f);
    const quant::Quantized q = quantize_host(x.data(), CastInput::fp32, rows, cols, opt);
    return mask_round(dequantize_host(q, rows, cols, opt), 0, 0, MaskOuter::clamp, MaskInner::min,
                      out_code(d));
  }

  std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                          const std::vector<float>& b, std::size_t cols, std::size_t k,
                          const gemm::AccumModel& m, DType d) override {
    gemm::Operand A, B;
    exmy::layer::gemm_operands(a, rows, b, cols, k, d, A, B);
    return exmy::layer::decode_output(gemm_emulate(A, B, m, exmy::layer::out_format(d)), d);
  }

  std::vector<float> mask(const std::vector<float>& v,
                          const exmy::layer::LayerConfig& cfg) override {
    return mask_round(v, cfg.mask_e, cfg.mask_m, cfg.mask_outer, cfg.mask_inner,
                      out_code(cfg.dtype));
  }

  // The prepared operands: fake_float8, dequantize_int8_rows of the row-wise quantization, and
  // mask, each computed on the device from the staged view and kept there (an OpView whose data
  // is a device pointer, read only by gemm_rows below).
  OpView prepare_float8(const MatView& x, Gran gran, const FloatFormat& f, DType d) override {
    std::unique_ptr<DeviceMat> dx = to_device(x);
    round_trip(*dx, exmy::layer::float8_options(gran, f), d, dx->data());
    return on_device(std::move(dx));
  }

  OpView prepare_int8_rows(const MatView& x, DType d) override {
    std::unique_ptr<DeviceMat> dx = to_device(x);
    round_trip(*dx, exmy::layer::int8_options(Gran::row, native::ScaleOrder::div_mul), d,
               dx->data());
    return on_device(std::move(dx));
  }

  OpView prepare_mask(const MatView& x, const exmy::layer::LayerConfig& cfg) override {
    std::unique_ptr<DeviceMat> dx = to_device(x);
    mask_round_device(dx->data(), x.rows * x.cols, cfg.mask_e, cfg.mask_m, cfg.mask_outer,
                      cfg.mask_inner, out_code(cfg.dtype), dx->data());
    return on_device(std::move(dx));
  }

  // The view form of gemm: an operand on the host read through its view and staged a block of
  // rows at a time, a prepared one read where it is on the device, C handed back a block of rows
  // at a time (gpu::gemm_emulate_rows), so the host holds no contiguous fp32 copy of X (or of a
  // transpose) and no double copy of it (issue 36). The kernel reads the same doubles as gemm()
  // on contiguous copies: the same bits.
  void gemm_rows(const OpView& a, const OpView& b, const gemm::AccumModel& m, DType d,
                 const exmy::layer::RowSink& out) override {
    DeviceValues da, db;
    const bool ad = device_values(a, da), bd = device_values(b, db);
    gemm::Operand A = exmy::layer::gemm_operand(a, d), B = exmy::layer::gemm_operand(b, d);
    if (ad) A.source.reset();  // the shape, emin, type and code bits only
    if (bd) B.source.reset();
    const std::size_t N = b.rows();
    std::vector<float> vals;
    gemm_emulate_rows(A, ad ? &da : nullptr, B, bd ? &db : nullptr, m, exmy::layer::out_format(d),
                      1.0, nullptr, [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                        vals.resize((i1 - i0) * N);
                        for (std::size_t t = 0; t < vals.size(); ++t) {
                          vals[t] = exmy::layer::decode_output_code(c[t], d);
                        }
                        out(i0, i1, vals.data());
                      });
  }

  // int8_product of the two quantizations: each source staged and quantized on the device
  // (quantize_int8's kernels), B's codes transposed there, the product's rows handed back a
  // block at a time.
  void int8_product_rows(const Int8Operand& a, const Int8Operand& b, native::DequantOrder order,
                         DType d, const exmy::layer::RowSink& out) override {
    const std::size_t M = a.rows(), N = b.rows(), K = a.cols();
    const auto quantized = [](const Int8Operand& o) {
      const std::unique_ptr<DeviceMat> x = to_device(o.src);
      return quantize_device(*x, exmy::layer::int8_options(o.gran, o.order));
    };
    const std::unique_ptr<DeviceQuantized> qa = quantized(a), qb = quantized(b);
    if (b.cols() != K || qa->groups != M || (qb->groups != N && qb->groups != 1)) {
      throw std::logic_error("int8_product_rows: operands or states do not match");
    }
    if (M * N == 0) return;
    const DeviceBuffer bt(N * K);
    transpose(qb->codes.as<std::int8_t>(), N, K, bt.as<std::int8_t>());
    sync("k_transpose");
    const DeviceBuffer c(M * N * sizeof(float));
    int8_product_device(qa->codes.as<std::int8_t>(), qa->state.as<float>(), M, bt.as<std::int8_t>(),
                        qb->state.as<float>(), qb->groups == 1 && N != 1, N, K, order, out_code(d),
                        c.as<float>());
    hand_back(c.as<float>(), M, N, out);
  }

 private:
  // Device matrices this engine made (prepared operands), by their data pointer.
  std::vector<const void*> device_;

  OpView on_device(std::unique_ptr<DeviceMat> m) {
    std::shared_ptr<const DeviceMat> p(std::move(m));
    OpView o = exmy::layer::op_view(exmy::layer::view_of(p->data(), p->rows, p->cols));
    o.keep = p;
    device_.push_back(p->data());
    return o;
  }

  bool device_values(const OpView& o, DeviceValues& dv) const {
    if (o.v.data == nullptr ||
        std::find(device_.begin(), device_.end(), o.v.data) == device_.end()) {
      return false;
    }
    if (o.step) throw std::logic_error("gpu layer: a device operand with an element step");
    dv.values = static_cast<const float*>(o.v.data);
    dv.rs = o.v.rs;
    dv.cs = o.v.cs;
    return true;
  }
};

}  // namespace

exmy::layer::LayerResult run_layer(const exmy::layer::LayerConfig& cfg,
                                   const exmy::layer::LayerShape& s, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& g) {
  GpuEngine engine;
  return exmy::layer::run_layer(cfg, s, x, w, g, engine);
}

void run_layer_rows(const exmy::layer::LayerConfig& cfg, const exmy::layer::LayerShape& s,
                    const exmy::layer::MatView& x, const exmy::layer::MatView& w,
                    const exmy::layer::MatView& g, const exmy::layer::LayerSinks& out) {
  GpuEngine engine;
  exmy::layer::run_layer_rows(cfg, s, x, w, g, out, engine);
}

}  // namespace exmy::gpu::layer
