#include "sim/gemm/accum_model.hpp"

#include <vector>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::gemm {

std::string accum_model_help() {
  return "exact | fp32-seq | pairwise | "
         "hw:k=K,frac=N[,inter=M][,rne][,tf32[=rz|rna|rne]][,split=S[,tile=T][,tree]]"
         "[,chunk=P] | sm80 | sm90 | sm100 | cublas-sm90";
}

namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw InputError("--accum '" + text + "': " + why + " (expected " + accum_model_help() + ")");
}

// The NVIDIA presets, from MMA-Sim's published models (SEMANTICS 15.2): fraction bits per
// architecture, instruction K per input type, FP8's e8m13 intermediate on Ada/Hopper, the
// split of Ampere's k16 (k8 for tf32) instructions into two fused halves.
AccumModel preset(const std::string& text, int a_bits) {
  AccumModel m;
  m.kind = AccumKind::hw;
  m.name = text;
  const bool fp8 = a_bits <= 8, tf32 = a_bits > 16;
  if (text == "sm90" || text == "cublas-sm90") {
    m.frac_bits = fp8 ? 13 : 25;
    m.inter_bits = fp8 ? 13 : 23;
    m.k_group = fp8 ? 32 : tf32 ? 8 : 16;
    if (text == "cublas-sm90") {
      // Measured on an H100 (bench/results/2026-11-25-h100-gemm-probe.md): torch._scaled_mm's
      // FP8 kernels promote the e8m13 tensor-core sum into fp32 every 128 k (4 instructions);
      // the TF32 kernels round fp32 inputs to nearest even (ties resolved to even, not away) and
      // promote every 64 k (measured to K = 1024).
      // 16-bit inputs: partial sums of 1408 k (11 k-tiles of 128) meet in fp32 adds at large K
      // (probed: k < 1408 fused with k = 0, k >= 1408 added in fp32; K up to 16384).
      if (fp8) m.chunk = 128;
      if (tf32) m.chunk = 64;
      if (!fp8 && !tf32) m.chunk = 1408;
      m.tf32_round = AccumModel::Tf32Round::rne;
    }
  } else if (text == "sm80") {
    if (fp8) bad(text, "sm80 (mma.sync on Ampere) has no FP8 instruction");
    m.frac_bits = 24;
    m.k_group = tf32 ? 4 : 8;  // m16n8k8 tf32 / m16n8k16 bf16,fp16 run as two fused halves
  } else if (text == "sm100") {
    m.frac_bits = 25;
    m.k_group = fp8 ? 32 : tf32 ? 8 : 16;
  } else {
    bad(text, "unknown model");
  }
  m.truncate_tf32 = tf32;
  return m;
}

}  // namespace

AccumModel parse_accum_model(const std::string& text, int a_bits) {
  AccumModel m;
  m.name = text;
  if (text == "exact") {
    m.kind = AccumKind::exact;
    return m;
  }
  if (text == "fp32-seq") {
    m.kind = AccumKind::fp32_seq;
    return m;
  }
  if (text == "pairwise") {
    m.kind = AccumKind::pairwise;
    return m;
  }
  if (text.rfind("hw:", 0) == 0) {
    m.kind = AccumKind::hw;
    bool have_k = false, have_frac = false;
    std::string rest = text.substr(3);
    std::size_t pos = 0;
    while (pos <= rest.size()) {
      std::size_t end = rest.find(',', pos);
      if (end == std::string::npos) end = rest.size();
      const std::string item = rest.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) bad(text, "empty option");
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq);
      const std::string val = eq == std::string::npos ? "" : item.substr(eq + 1);
      auto num = [&](std::uint64_t lo, std::uint64_t hi) {
        const std::uint64_t v = number::parse_u64(val, "--accum " + key, hi, false);
        if (v < lo) bad(text, key + " must be at least " + std::to_string(lo));
        return static_cast<int>(v);
      };
      if (key == "k") {
        m.k_group = num(1, 4096);
        have_k = true;
      } else if (key == "frac") {
        m.frac_bits = num(1, 40);
        have_frac = true;
      } else if (key == "inter") {
        m.inter_bits = num(1, 23);
      } else if (key == "split") {
        m.split_k = num(1, 1 << 20);
      } else if (key == "rne" && val.empty()) {
        m.inter_rne = true;
      } else if (key == "tf32" && (val.empty() || val == "rz" || val == "rna" || val == "rne")) {
        m.truncate_tf32 = true;
        m.tf32_round = val == "rna"   ? AccumModel::Tf32Round::rna
                       : val == "rne" ? AccumModel::Tf32Round::rne
                                      : AccumModel::Tf32Round::rz;
      } else if (key == "tree" && val.empty()) {
        m.reduce_tree = true;
      } else if (key == "tile") {
        m.tile = num(1, 1 << 20);
      } else if (key == "chunk") {
        m.chunk = num(1, 1 << 24);
      } else {
        bad(text, "unknown option '" + item + "'");
      }
    }
    if (!have_k || !have_frac) bad(text, "hw needs k= and frac=");
    return m;
  }
  return preset(text, a_bits);
}

}  // namespace exmy::gemm
