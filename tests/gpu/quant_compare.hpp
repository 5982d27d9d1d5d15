// Runs gpu::quantize / gpu::dequantize and quant::quantize / quant::dequantize on the same values
// and reports the first difference (codes, state, MX scales, dequantized values), bit for bit.
#pragma once

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/cast/widen.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/native/convert.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace exmy::gpu::testing {

// The quantizers' test input: the first n of xs, bit patterns of in_type (fp32 codes, or bf16/fp16
// codes in the low 16 bits); raw gets their bytes as the GPU reads them (little-endian,
// input_bytes(in_type) each) and xf their exact widening to fp32, what the CPU reference sees.
inline void encode_quant_input(CastInput in_type, const std::vector<std::uint32_t>& xs,
                               std::size_t n, std::vector<float>& xf,
                               std::vector<std::uint8_t>& raw) {
  const std::size_t bytes = input_bytes(in_type);
  xf.resize(n);
  raw.resize(n * bytes);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = in_type == CastInput::fp32   ? xs[i]
                            : in_type == CastInput::bf16 ? widen_bf16(xs[i] & 0xFFFFu)
                                                         : widen_fp16(xs[i] & 0xFFFFu);
    xf[i] = native::float_of(b);
    for (std::size_t k = 0; k < bytes; ++k) raw[i * bytes + k] = (xs[i] >> (8 * k)) & 0xFF;
  }
}

// xs as encode_quant_input takes them (rows x cols of them). Returns "" when everything matches.
inline std::string compare_quantize(CastInput in_type, const std::vector<std::uint32_t>& xs,
                                    std::size_t rows, std::size_t cols, const quant::Options& opt) {
  const std::size_t n = rows * cols;
  std::vector<float> xf;
  std::vector<std::uint8_t> raw;
  encode_quant_input(in_type, xs, n, xf, raw);
  const quant::Quantized ref = quant::quantize(xf, {rows, cols}, opt);
  const std::vector<float> ref_deq = quant::dequantize(ref, opt);
  const std::size_t groups = quant::group_count(opt.scheme, rows, cols);
  const bool mx = quant::make_plan(opt).byte_scales();  // MX and NVFP4: byte scale codes

  DeviceBytes dx(raw.size() + 1), dcodes(n + 1), dstate(groups * 4 + 4), dmx(groups + 1),
      ddeq(n * 4 + 4), dtensor(8);
  dx.upload(raw);
  QuantizedOut out;
  out.codes = static_cast<std::uint8_t*>(dcodes.get());
  out.state = static_cast<float*>(dstate.get());
  out.scale_codes = static_cast<std::uint8_t*>(dmx.get());
  out.tensor_scale = static_cast<float*>(dtensor.get());
  quantize(dx.get(), in_type, rows, cols, opt, out);
  const float tensor_scale = opt.two_level ? dtensor.download<float>(1)[0] : 1.0f;
  if (opt.two_level && native::bits_of(tensor_scale) != native::bits_of(ref.tensor_scale)) {
    std::ostringstream t;
    t << std::hex << "tensor scale: gpu 0x" << native::bits_of(tensor_scale) << " cpu 0x"
      << native::bits_of(ref.tensor_scale);
    return t.str();
  }
  dequantize(out.codes, out.state, out.scale_codes, rows, cols, opt,
             static_cast<float*>(ddeq.get()), nullptr, tensor_scale);
  const auto codes = dcodes.download<std::uint8_t>(n);
  const auto state = dstate.download<std::uint32_t>(groups);
  const auto scales = dmx.download<std::uint8_t>(groups);
  const auto deq = ddeq.download<std::uint32_t>(n);

  std::ostringstream s;
  s << std::hex;
  for (std::size_t g = 0; g < groups; ++g) {
    if (mx && scales[g] != ref.scale_codes[g]) {
      s << "mx scale of group " << std::dec << g << std::hex << ": gpu 0x" << unsigned(scales[g])
        << " cpu 0x" << unsigned(ref.scale_codes[g]);
      return s.str();
    }
    if (!mx && state[g] != native::bits_of(ref.state[g])) {
      s << "state of group " << std::dec << g << std::hex << ": gpu 0x" << state[g] << " cpu 0x"
        << native::bits_of(ref.state[g]);
      return s.str();
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (codes[i] != ref.codes[i]) {
      s << "code " << std::dec << i << std::hex << ": gpu 0x" << unsigned(codes[i]) << " cpu 0x"
        << unsigned(ref.codes[i]);
      return s.str();
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (deq[i] != native::bits_of(ref_deq[i])) {
      s << "dequantized " << std::dec << i << std::hex << " (input 0x" << xs[i] << "): gpu 0x"
        << deq[i] << " cpu 0x" << native::bits_of(ref_deq[i]);
      return s.str();
    }
  }
  return "";
}

}  // namespace exmy::gpu::testing
#endif
