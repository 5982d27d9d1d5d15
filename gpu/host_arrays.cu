// Host-array wrappers of the GPU kernels (gpu/host_arrays.hpp): upload, launch, download.
#include <cuda_runtime.h>

#include <string>

#include "gpu/cuda_check.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/host_arrays.hpp"
#include "gpu/quantize.hpp"
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

HostQuantized quantize_host(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                            const quant::Options& opt) {
  const std::size_t n = rows * cols;
  const std::size_t groups = quant::group_count(opt.scheme, rows, cols);
  const bool mx = opt.scheme.kind == quant::Granularity::mx;
  const DeviceBuffer dx(x, n * input_bytes(in_type));
  const DeviceBuffer codes(n);
  const DeviceBuffer state(mx ? 0 : groups * sizeof(float));
  const DeviceBuffer scales(mx ? groups : 0);
  quantize(dx.as<void>(), in_type, rows, cols, opt,
           QuantizedOut{codes.as<std::uint8_t>(), state.as<float>(), scales.as<std::uint8_t>()});
  finish("quantize kernels");
  HostQuantized q;
  q.codes = codes.download<std::uint8_t>(n);
  if (mx) {
    q.mx_scales = scales.download<std::uint8_t>(groups);
  } else {
    q.state = state.download<float>(groups);
  }
  return q;
}

std::vector<float> dequantize_host(const HostQuantized& q, std::size_t rows, std::size_t cols,
                                   const quant::Options& opt) {
  const std::size_t n = rows * cols;
  const std::size_t groups = quant::group_count(opt.scheme, rows, cols);
  const bool mx = opt.scheme.kind == quant::Granularity::mx;
  if (q.codes.size() != n || (mx ? q.mx_scales.size() : q.state.size()) != groups) {
    throw InputError("dequantize: expected " + std::to_string(n) + " codes and " +
                     std::to_string(groups) + (mx ? " mx scales" : " states") + ", got " +
                     std::to_string(q.codes.size()) + " and " +
                     std::to_string(mx ? q.mx_scales.size() : q.state.size()));
  }
  const DeviceBuffer codes(q.codes.data(), n);
  const DeviceBuffer state(q.state.data(), mx ? 0 : groups * sizeof(float));
  const DeviceBuffer scales(q.mx_scales.data(), mx ? groups : 0);
  const DeviceBuffer out(n * sizeof(float));
  dequantize(codes.as<std::uint8_t>(), state.as<float>(), scales.as<std::uint8_t>(), rows, cols,
             opt, out.as<float>());
  finish("dequantize kernel");
  return out.download<float>(n);
}

}  // namespace exmy::gpu
