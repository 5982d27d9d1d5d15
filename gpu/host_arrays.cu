// Host-array wrappers of the GPU kernels (gpu/host_arrays.hpp): upload, launch, download.
#include <cuda_runtime.h>

#include <string>

#include "gpu/common/launch.hpp"
#include "gpu/host_arrays.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {
namespace {

void finish(const char* what) {
  cuda_check(cudaGetLastError(), what);
  cuda_check(cudaDeviceSynchronize(), what);
}

}  // namespace

std::vector<std::uint8_t> cast_codes_host(const void* in, CastInput in_type, std::size_t n,
                                          const CastParams& params) {
  const std::size_t out_bytes = n * code_bytes(params.to);
  const DeviceBuffer x(in, n * input_bytes(in_type));
  const DeviceBuffer codes(out_bytes);
  cast_codes(x.as<void>(), in_type, n, codes.as<void>(), params);
  finish("cast kernel");
  return codes.download<std::uint8_t>(out_bytes);
}

std::vector<float> cast_fake_quant_host(const void* in, CastInput in_type, std::size_t n,
                                        const CastParams& params) {
  const DeviceBuffer x(in, n * input_bytes(in_type));
  const DeviceBuffer out(n * sizeof(float));
  cast_fake_quant(x.as<void>(), in_type, n, out.as<float>(), params);
  finish("fake-quant kernel");
  return out.download<float>(n);
}

std::vector<std::uint8_t> cast_compat_codes_host(const void* in, CastInput in_type, std::size_t n,
                                                 native::CompatCast rule) {
  const DeviceBuffer x(in, n * input_bytes(in_type));
  const DeviceBuffer codes(n);
  cast_compat_codes(x.as<void>(), in_type, n, codes.as<std::uint8_t>(), rule);
  finish("compat cast kernel");
  return codes.download<std::uint8_t>(n);
}

quant::Quantized quantize_host(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                               const quant::Options& opt) {
  const std::size_t n = rows * cols;
  const std::size_t groups = quant::group_count(opt.scheme, rows, cols);
  const bool bytes = quant::make_plan(opt).byte_scales();
  const DeviceBuffer dx(x, n * input_bytes(in_type));
  const DeviceBuffer codes(n);
  const DeviceBuffer state(bytes ? 0 : groups * sizeof(float));
  const DeviceBuffer scales(bytes ? groups : 0);
  const DeviceBuffer tensor(opt.two_level ? sizeof(float) : 0);
  quantize(dx.as<void>(), in_type, rows, cols, opt,
           QuantizedOut{codes.as<std::uint8_t>(), state.as<float>(), scales.as<std::uint8_t>(),
                        tensor.as<float>()});
  finish("quantize kernels");
  quant::Quantized q;
  q.shape = {rows, cols};
  q.state_shape = {groups};
  q.codes = codes.download<std::uint8_t>(n);
  if (bytes) {
    q.scale_codes = scales.download<std::uint8_t>(groups);
  } else {
    q.state = state.download<float>(groups);
  }
  if (opt.two_level) q.tensor_scale = tensor.download<float>(1)[0];
  return q;
}

std::vector<float> dequantize_host(const quant::Quantized& q, std::size_t rows, std::size_t cols,
                                   const quant::Options& opt) {
  const std::size_t n = rows * cols;
  const std::size_t groups = quant::group_count(opt.scheme, rows, cols);
  const bool bytes = quant::make_plan(opt).byte_scales();
  const std::size_t have = bytes ? q.scale_codes.size() : q.state.size();
  if (q.codes.size() != n || have != groups) {
    throw InputError("dequantize: expected " + std::to_string(n) + " codes and " +
                     std::to_string(groups) + (bytes ? " scale codes" : " states") + ", got " +
                     std::to_string(q.codes.size()) + " and " + std::to_string(have));
  }
  quant::check_codes(q.codes, opt);
  const DeviceBuffer codes(q.codes.data(), n);
  const DeviceBuffer state(q.state.data(), bytes ? 0 : groups * sizeof(float));
  const DeviceBuffer scales(q.scale_codes.data(), bytes ? groups : 0);
  const DeviceBuffer out(n * sizeof(float));
  dequantize(codes.as<std::uint8_t>(), state.as<float>(), scales.as<std::uint8_t>(), rows, cols,
             opt, out.as<float>(), nullptr, q.tensor_scale);
  finish("dequantize kernel");
  return out.download<float>(n);
}

}  // namespace exmy::gpu
