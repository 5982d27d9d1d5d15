// bitsandbytes' 4-bit quantization, the CPU reference (docs/SEMANTICS.md 7.14): block loops
// over sim/native/bnb_4bit.hpp's element functions; the double quantization's second level runs
// through quant::quantize / quant::dequantize under the bnb-cuda profile (the 8-bit
// kQuantizeBlockwise / kDequantizeBlockwise that quantize_blockwise and dequantize_blockwise call).
#include "sim/quant/bnb4bit.hpp"

#include <string>

#include "sim/common/error.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::quant {

native::Bnb4Type parse_bnb4_type(std::string_view s) {
  if (s == "nf4") return native::Bnb4Type::nf4;
  if (s == "fp4") return native::Bnb4Type::fp4;
  throw InputError("4-bit type '" + std::string(s) + "': expected nf4 or fp4");
}

const char* bnb4_type_name(native::Bnb4Type t) {
  return t == native::Bnb4Type::nf4 ? "nf4" : "fp4";
}

void check_bnb4_block(std::size_t block) {
  // quantize_4bit accepts these; ops.cu has a kernel instantiation for each (32 and 64 through
  // kQuantizeBlockwiseSmall).
  for (std::size_t b = 32; b <= 4096; b *= 2) {
    if (block == b) return;
  }
  throw InputError("--scheme block:" + std::to_string(block) +
                   ": bitsandbytes' 4-bit blocks are 32, 64, 128, 256, 512, 1024, 2048 or 4096");
}

std::vector<float> bnb4_block_absmax(const Values& x, std::size_t block) {
  const std::size_t n = x.size();
  const std::size_t blocks = (n + block - 1) / block;
  std::vector<float> a(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t lo = b * block, hi = std::min(n, lo + block);
    float acc = native::kBnb4AbsmaxInit;
    for (std::size_t i = lo; i < hi; ++i) acc = native::bnb4_absmax_step(acc, x[i]);
    a[b] = native::bnb4_absmax_finish(acc, hi - lo < block);
  }
  return a;
}

namespace {

// The options of the second level: quantize_blockwise(..., blocksize=256) with the signed dynamic
// map, under the bnb-cuda profile.
Options stats_options() {
  Options o;
  o.scheme = {Granularity::block, kBnb4StatsBlock};
  o.target = parse_target("dynamic");
  apply_compat(o, "bnb-cuda", {});
  return o;
}

}  // namespace

Bnb4Quantized bnb4_quantize(const Values& x, const Bnb4Options& opt) {
  check_bnb4_block(opt.block);
  if (x.empty()) throw InputError("input: bitsandbytes' quantize_4bit needs at least one element");
  const std::size_t n = x.size();
  Bnb4Quantized q;
  q.absmax = bnb4_block_absmax(x, opt.block);
  const native::SfuTables& sfu = sfu::sm90_rcp_view();
  q.packed.resize((n + 1) / 2);
  for (std::size_t j = 0; j < q.packed.size(); ++j) {
    const std::size_t i = 2 * j;
    const float a = q.absmax[i / opt.block];  // 2j and 2j + 1 share a block (even block sizes)
    const std::uint8_t hi = native::bnb4_code(opt.type, x[i], a, sfu);
    // The padding element of an odd n is a loaded zero, coded like the others.
    const std::uint8_t lo = native::bnb4_code(opt.type, i + 1 < n ? x[i + 1] : 0.0f, a, sfu);
    q.packed[j] = native::bnb4_pack(hi, lo);
  }
  if (opt.double_quant) {
    const std::size_t blocks = q.absmax.size();
    q.offset = native::torch_cuda_mean(q.absmax.data(), blocks, opt.sms);
    std::vector<float> centred(blocks);
    for (std::size_t b = 0; b < blocks; ++b) {
      const float d = native::rn_sub(q.absmax[b], q.offset);  // torch's CUDA sub: no FTZ
      centred[b] = d != d ? native::f32_from_bits(0x7FFFFFFFu) : d;
    }
    Quantized s = quantize(std::span<const float>(centred), {blocks}, stats_options());
    q.absmax_codes = std::move(s.codes);
    q.absmax2 = std::move(s.state);
    q.absmax.clear();
  }
  return q;
}

std::vector<float> bnb4_dequant_absmax(const Bnb4Quantized& q, std::size_t blocks,
                                       const Bnb4Options& opt) {
  if (!opt.double_quant) {
    if (q.absmax.size() != blocks) {
      throw InputError("state: expected " + std::to_string(blocks) + " fp32 absmax values, got " +
                       std::to_string(q.absmax.size()));
    }
    return q.absmax;
  }
  if (q.absmax_codes.size() != blocks) {
    throw InputError("state: expected " + std::to_string(blocks) + " absmax codes, got " +
                     std::to_string(q.absmax_codes.size()));
  }
  const std::size_t groups = (blocks + kBnb4StatsBlock - 1) / kBnb4StatsBlock;
  if (q.absmax2.size() != groups) {
    throw InputError("state2: expected " + std::to_string(groups) +
                     " fp32 second-level absmax values, got " + std::to_string(q.absmax2.size()));
  }
  Quantized s;
  s.shape = {blocks};
  s.codes = q.absmax_codes;
  s.state = q.absmax2;
  s.state_shape = {groups};
  std::vector<float> a = dequantize(s, stats_options());
  for (float& v : a) v = native::rn_add(v, q.offset);  // absmax += offset (torch, RN32)
  return a;
}

std::vector<float> bnb4_dequantize_absmax(const Bnb4Quantized& q, std::size_t packed_bytes,
                                          std::size_t n, const Bnb4Options& opt) {
  check_bnb4_block(opt.block);
  if (packed_bytes != (n + 1) / 2) {
    throw InputError("codes: " + std::to_string(n) + " values need " + std::to_string((n + 1) / 2) +
                     " bytes, got " + std::to_string(packed_bytes));
  }
  const std::size_t blocks = (n + opt.block - 1) / opt.block;
  return bnb4_dequant_absmax(q, blocks, opt);
}

void bnb4_dequantize_values(const std::uint8_t* packed, const std::vector<float>& absmax,
                            std::size_t i0, std::size_t i1, native::Bnb4Dtype d,
                            const Bnb4Options& opt, std::uint32_t* out) {
  for (std::size_t i = i0; i < i1; ++i) {
    const std::uint8_t c = native::bnb4_unpack(packed, i);
    out[i - i0] = native::bnb4_store(native::bnb4_value(opt.type, c, absmax[i / opt.block]), d);
  }
}

std::vector<std::uint32_t> bnb4_dequantize(const Bnb4Quantized& q, std::size_t n,
                                           native::Bnb4Dtype d, const Bnb4Options& opt) {
  const std::vector<float> a = bnb4_dequantize_absmax(q, q.packed.size(), n, opt);
  std::vector<std::uint32_t> out(n);
  bnb4_dequantize_values(q.packed.data(), a, 0, n, d, opt, out.data());
  return out;
}

}  // namespace exmy::quant
