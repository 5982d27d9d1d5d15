#include "sim/gemm/accum_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/gemm/gemm_profile.hpp"
#include "sim/gemm/launch_rules.hpp"

namespace exmy::gemm {

std::string accum_model_help() {
  return "exact | fp32-seq[:chunk=P | "
         ":lanes=L[,vec=V|auto][,lanesum=tree|seq|fold][,lanechunk=C]][,split=S[,tile=T[,tail|fill]"
         "]"
         "[,tree]] | fp32-seq:dot=G | pairwise | "
         "hw:k=K,frac=N[,inter=M][,rne][,tf32[=rz|rna|rne]][,sub=G][,ktile=T][,split=S"
         "[,tile=T[,tail|fill]][,tree]][,chunk=P[,rp]] | "
         "amd:k=K[,frac=N][,two-stage][,tf32][,ktile=T][,split=S[,tile=T[,tail|fill]][,tree]][,"
         "chunk=P] "
         "| "
         "sm80 | sm90 | sm100 | cublas-sm90[-h100|-h200] | cdna3 | deepgemm | cutlass-sm90; "
         "hw, fp32-seq with tile scales: [,promote=a-first|b-first|product|cublas|te|cutlass]";
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
      // Measured on an H100 (bench/results/2026-11-25-h100-gemm-probe.md,
      // 2026-11-25-h100-gemm-million.md): torch._scaled_mm's FP8 kernels promote the e8m13
      // tensor-core sum into fp32 every 128 k (4 instructions) at every shape measured; the
      // TF32 kernels round fp32 inputs to nearest even (ties resolved to even, not away).
      // 16-bit and TF32 inputs: the chunk depends on the shape (cuBLASLt's kernel choice),
      // probed per shape by tools/probe_gemm.py and looked up by model_for_shape.
      if (fp8) m.chunk = 128;
      m.by_shape = !fp8;
      m.library = true;
      m.tf32_round = AccumModel::Tf32Round::rne;
    }
  } else if (text == "deepgemm" || text == "cutlass-sm90") {
    // Blockwise-scaled FP8 kernels of Hopper (SEMANTICS 15.7): the e8m13 WGMMA sum of every 128 k
    // (4 instructions of k = 32) promoted into fp32 registers with the k-block's scales.
    // DeepGEMM (deepseek-ai/DeepGEMM, fp8_gemm.cuh: scale = scale_a * scale_b, then
    // final_accum += scale * accum, an FFMA): product. CUTLASS's
    // sm90_mma_tma_gmma_ss_warpspecialized_fp8_blockwise_scaling.hpp with GmmaFP8Accumulation
    // (fp8_accumulation.hpp; promotion interval 4 MMAs): cutlass. Source-derived, not measured.
    if (!fp8) bad(text, text + " is an FP8 kernel (operands of at most 8 bits)");
    m.frac_bits = 13;
    m.inter_bits = 13;
    m.k_group = 32;
    m.chunk = 128;
    m.promote = text == "deepgemm" ? AccumModel::Promote::product : AccumModel::Promote::cutlass;
    return m;
  } else if (text == "cdna3") {
    // MMA-Sim's AMD CDNA3 MFMA models (published; exmy has no AMD device): FP8 k = 16 in two
    // stages, bf16/fp16 k = 8, 24 fraction bits; fp32 operands run the plain f32 MFMA, an FMA
    // chain (xf32 is `amd:k=4,tf32`).
    if (tf32) {
      m.kind = AccumKind::fp32_seq;
      return m;
    }
    m.kind = AccumKind::amd;
    m.frac_bits = 24;
    m.k_group = fp8 ? 16 : 8;
    m.two_stage = fp8;
    return m;
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
  const bool seq = text.rfind("fp32-seq:", 0) == 0;
  const bool amd = text.rfind("amd:", 0) == 0;
  if (seq || amd || text.rfind("hw:", 0) == 0) {
    // fp32-seq takes the options that arrange chains (chunks, split-K), hw and amd also their
    // group's (amd: frac defaults to CDNA3's 24).
    m.kind = seq ? AccumKind::fp32_seq : amd ? AccumKind::amd : AccumKind::hw;
    if (amd) m.frac_bits = 24;
    bool have_k = seq, have_frac = seq || amd;
    std::string rest = text.substr(seq ? 9 : amd ? 4 : 3);
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
      const bool group_key = key == "k" || key == "frac" || key == "inter" || key == "rne" ||
                             key == "tf32" || key == "sub" || key == "two-stage" || key == "ktile";
      if (amd && (key == "inter" || key == "rne" || key == "sub")) {
        bad(text, "'" + key + "' is an option of hw (amd normalises to fp32 by RNE itself)");
      }
      if (!amd && key == "two-stage") bad(text, "'two-stage' is an option of amd");
      if (seq && group_key) {
        bad(text, "'" + key + "' is an option of hw (fp32-seq takes chunk, split, tile, tree)");
      }
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
      } else if (key == "tail" && val.empty()) {
        m.tile_tail = true;
      } else if (key == "fill" && val.empty()) {
        m.tile_fill = true;
      } else if (key == "ktile") {
        m.ktile = num(1, 1 << 20);
      } else if (key == "chunk") {
        m.chunk = num(1, 1 << 24);
      } else if (key == "sub") {
        m.sub_group = num(1, 4096);
      } else if (key == "two-stage" && val.empty()) {
        m.two_stage = true;
      } else if (key == "promote" && !amd) {
        using P = AccumModel::Promote;
        m.promote = val == "a-first"   ? P::a_first
                    : val == "b-first" ? P::b_first
                    : val == "product" ? P::product
                    : val == "cublas"  ? P::cublas
                    : val == "te"      ? P::te
                    : val == "cutlass" ? P::cutlass
                                       : P::unset;
        if (m.promote == P::unset) {
          bad(text,
              "promote=" + val + ": expected a-first, b-first, product, cublas, te or cutlass");
        }
      } else if (key == "rp" && val.empty()) {
        m.rp = true;
      } else if (seq && key == "lanes") {
        m.lanes = num(1, 4096);
      } else if (seq && key == "lanechunk") {
        m.lane_chunk = num(1, 1 << 20);
      } else if (seq && key == "dot") {
        m.dot_ctas = num(1, 4096);
      } else if (seq && key == "vec") {
        m.vec = val == "auto" ? 0 : num(1, 1 << 20);
      } else if (seq && key == "lanesum" && (val == "tree" || val == "seq" || val == "fold")) {
        m.lane_sum = val == "seq"    ? native::DotModel::LaneSum::seq
                     : val == "fold" ? native::DotModel::LaneSum::fold
                                     : native::DotModel::LaneSum::tree;
      } else {
        bad(text, "unknown option '" + item + "'");
      }
    }
    if (!have_k || !have_frac) bad(text, amd ? "amd needs k=" : "hw needs k= and frac=");
    if (m.rp && (m.chunk == 0 || m.split_k > 1 || m.sub_group > 0)) {
      bad(text, "rp (16-bit split-K partials) needs chunk=P, and no split or sub");
    }
    if (m.lanes > 1 && m.chunk > 0) bad(text, "lanes and chunk do not combine");
    if (m.dot_ctas > 0 && (m.lanes > 1 || m.chunk > 0 || m.split_k > 1)) {
      bad(text, "dot=G takes no lanes, chunk or split");
    }
    if (m.lanes == 1 &&
        (m.vec != 1 || m.lane_sum != native::DotModel::LaneSum::tree || m.lane_chunk > 0)) {
      bad(text, "vec, lanesum and lanechunk need lanes=L");
    }
    if (m.lane_sum == native::DotModel::LaneSum::tree && (m.lanes & (m.lanes - 1)) != 0) {
      bad(text,
          "lanes must be a power of two for the halving tree (lanesum=seq and fold take "
          "any lanes)");
    }
    if (m.tile_tail && m.tile == 0) bad(text, "tail needs tile=T");
    if (m.tile_fill && (m.tile == 0 || m.tile_tail)) bad(text, "fill needs tile=T and no tail");
    if (amd && m.frac_bits > 30) bad(text, "amd's frac is at most 30");
    if (m.ktile > 0 && m.ktile % m.k_group != 0) {
      bad(text, "ktile=" + std::to_string(m.ktile) +
                    " must be a multiple of k=" + std::to_string(m.k_group));
    }
    if (m.ktile > 0 && m.sub_group > 0) bad(text, "ktile and sub do not combine");
    if (m.sub_group > 0 && m.k_group % m.sub_group != 0) {
      bad(text,
          "sub=" + std::to_string(m.sub_group) + " must divide k=" + std::to_string(m.k_group));
    }
    return m;
  }
  // cublas-sm90-NAME: one GPU's launch records (checked against the profile where a GEMM reads
  // them: model_for_shape).
  if (text.rfind("cublas-sm90-", 0) == 0) {
    const std::string gpu = text.substr(12);
    if (gpu.empty() ||
        gpu.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
      bad(text, "cublas-sm90-NAME needs a GPU name such as h100 or h200");
    }
    AccumModel m = preset("cublas-sm90", a_bits);
    m.name = text;
    m.gpu = gpu;
    return m;
  }
  return preset(text, a_bits);
}

AccumModel block_scaled_model(const AccumModel& m, int a_value_bits, int b_value_bits) {
  if (m.kind == AccumKind::amd) {
    throw InputError("--accum " + m.name +
                     ": block scales need a block-scaled MMA; the amd model "
                     "(CDNA3 MFMA) has none");
  }
  if (m.name == "sm100") {
    AccumModel r = m;
    r.kind = AccumKind::hw;
    r.truncate_tf32 = false;
    r.inter_bits = 23;
    r.inter_rne = false;
    if (a_value_bits <= 4 && b_value_bits <= 4) {  // kind::mxf4, mxf4nvf4 (MMA-Sim)
      r.k_group = 64;
      r.frac_bits = 35;
      r.sub_group = 16;
    } else {  // kind::mxf8f6f4
      r.k_group = 32;
      r.frac_bits = 25;
      r.sub_group = 0;
    }
    return r;
  }
  if (m.name == "sm90" || m.name == "cublas-sm90" || m.name == "sm80" || !m.gpu.empty()) {
    throw InputError("--accum " + m.name +
                     ": block scales need a block-scaled MMA (sm100's tcgen05 kinds); Hopper and "
                     "Ampere have none (a dequantizing kernel is fp32-seq or exact on the scaled "
                     "values)");
  }
  return m;
}

namespace {
std::string shape_name(std::size_t M, std::size_t N, std::size_t K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}
}  // namespace

ShapeModel model_for_shape(const AccumModel& m, std::size_t M, std::size_t N, std::size_t K,
                           const std::string& type, const std::string& out) {
  if (!m.library) return ShapeModel{m, true, "", m.name};
  return model_for_shape(m, M, N, K, type, out, cublas_sm90_profile());
}

namespace {

// The output types of a GEMM with inputs of `type` (the launch records' outputs).
std::vector<std::string> outs_of(const std::string& type) {
  if (type == "bf16" || type == "fp16") return {type, "fp32"};
  return {"fp32"};
}

// The launch of GEMM `key` for the target GPU `gpu` ("" = every GPU of the profile): the record
// and, for "", whether the GPUs that recorded it disagree (then the base GPU's record, and a
// note naming each GPU's).
struct TargetLaunch {
  const LaunchRecord* rec = nullptr;
  std::string note;  // non-empty: the GPUs disagree (announced)
};
TargetLaunch target_launch(const GemmProfile& p, const std::string& gpu, const std::string& key) {
  TargetLaunch t;
  const std::vector<std::string> gpus = launch_gpus(p);
  if (!gpu.empty()) {
    t.rec = find_launch_on(p, gpu, key);
    return t;
  }
  for (const std::string& g : gpus) {
    if ((t.rec = find_launch_on(p, g, key)) != nullptr) break;
  }
  if (!launches_differ(p, key)) return t;
  t.note = "the launch differs between the sm90 GPUs exmy has records of (";
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const LaunchRecord* r = find_launch_on(p, gpus[i], key);
    t.note += (i ? "; " : "") + gpus[i] + ": " + (r ? launch_record_name(*r) : "not recorded");
  }
  t.note +=
      "; kernel, grid or split), so no GPU's launch is verified for cublas-sm90 without a "
      "GPU (cublas-sm90-NAME names one); applied " +
      gpus.front() + "'s: ";
  return t;
}

// Whether the profile's entries (measured on one GPU) hold for the target: on their own GPU;
// for "" unless the GPUs' launches differ at the shape; on another GPU only where both GPUs
// recorded every output's launch and they agree (the same kernels: the same arithmetic).
// `why`: what keeps them from holding.
bool entries_hold(const GemmProfile& p, const std::string& gpu, const std::string& type,
                  std::size_t M, std::size_t N, std::size_t K, std::string& why) {
  const std::vector<std::string> gpus = launch_gpus(p);
  const std::string eg = gpu_name(p.entries_device.empty() ? p.launch_device : p.entries_device);
  const bool eg_has = std::find(gpus.begin(), gpus.end(), eg) != gpus.end();
  if (gpu == eg) return true;
  for (const std::string& o : outs_of(type)) {
    const std::string key = launch_key(type, o, M, N, K);
    if (launches_differ(p, key)) {
      why = "its launch differs between " +
            (gpu.empty() ? std::string("the sm90 GPUs") : eg + " and " + gpu);
      return false;
    }
    if (gpu.empty()) continue;
    if (!eg_has || find_launch_on(p, eg, key) == nullptr ||
        find_launch_on(p, gpu, key) == nullptr) {
      why = gpu + "'s launch at this shape was not recorded beside " + eg + "'s";
      return false;
    }
  }
  return true;
}

}  // namespace

ShapeModel model_for_shape(const AccumModel& m, std::size_t M, std::size_t N, std::size_t K,
                           const std::string& type, const std::string& out,
                           const GemmProfile& profile) {
  ShapeModel r{m, true, "", m.name};
  if (!m.library) return r;
  if (!m.gpu.empty()) {
    const std::vector<std::string> gpus = launch_gpus(profile);
    if (std::find(gpus.begin(), gpus.end(), m.gpu) == gpus.end()) {
      std::string have;
      for (const std::string& g : gpus) have += (have.empty() ? "" : ", ") + g;
      throw InputError("--accum " + m.name + ": " + profile.source +
                       " holds no launch records of GPU '" + m.gpu + "' (it holds " +
                       (have.empty() ? std::string("none") : have) + ")");
    }
  }
  const std::string eg =
      gpu_name(profile.entries_device.empty() ? profile.launch_device : profile.entries_device);
  std::string hold_why;
  if (is_blockwise_type(type)) {
    // Tile-scaled FP8 (SEMANTICS 15.7): the launch record's rule when it is verified (spec and
    // measured; gemm.cpp's tile_scaled_model applies it); else the caller's one model,
    // announced, `from` naming the record or its absence.
    r.measured = false;
    const TargetLaunch tl = target_launch(profile, m.gpu, launch_key(type, out, M, N, K));
    if (tl.rec == nullptr) {
      r.from = "no launch record of " + launch_key(type, out, M, N, K);
      return r;
    }
    const LaunchRule lr = launch_rule(*tl.rec, type, out, M, N, K);
    r.from = tl.note + lr.why;
    if (lr.status == LaunchRule::Status::verified && tl.note.empty()) {
      r.spec = lr.model;
      r.measured = true;
    }
    return r;
  }
  if (!m.by_shape) {
    // FP8: one rule (chunk = 128) at every shape, verified on the profile's FP8 shapes.
    r.from = "one rule for every FP8 shape: " + std::string("hw:k=32,frac=13,inter=13,chunk=128");
    r.measured = false;
    for (const ProfileEntry& e : profile.entries) {
      if (e.type == type && e.M == M && e.N == N && e.K == K && !e.model.empty()) {
        r.measured = entries_hold(profile, m.gpu, type, M, N, K, hold_why);
        if (!r.measured) r.from += " (verified at this shape on " + eg + "; " + hold_why + ")";
      }
    }
    return r;
  }
  const int bits = type == "tf32" || type == "fp32" ? 32 : 16;
  auto take = [&](const std::string& model) {
    r.spec = model;
    r.model = parse_accum_model(model, bits);
    r.model.name = m.name;
    r.model.library = true;
    r.model.gpu = m.gpu;
  };
  // The launch record of this GEMM on the target GPU (the kernel the library ran, its split
  // count), through the family rules of launch_rules.cpp (SEMANTICS 15.6): a verified rule is
  // the model, silently, unless the GPUs' launches differ there (cublas-sm90 without a GPU).
  TargetLaunch tl;
  if (!out.empty()) tl = target_launch(profile, m.gpu, launch_key(type, out, M, N, K));
  const LaunchRecord* rec = tl.rec;
  LaunchRule lr;
  if (rec != nullptr) {
    // A bias epilogue ("bf16+bias") runs the family's accumulation; the caller adds the bias.
    lr = launch_rule(*rec, type, out.substr(0, out.find('+')), M, N, K);
    if (lr.status == LaunchRule::Status::verified && tl.note.empty()) {
      take(lr.model);
      r.measured = true;
      r.from = lr.why;
      return r;
    }
    lr.why = tl.note + lr.why;
  }
  // The verified set: the profile's shapes of this input type whose model reproduced the
  // library bit for bit (tools/probe_gemm.py's checks, the random-shape campaigns of
  // bench/peers/gemm_kernel_select_*.py). Elsewhere the rule: the nearest modelled shape of the
  // same type and alignment class (shape_class; the class decides between cuBLASLt's kernel
  // families: TMA kernels need 16-byte aligned rows, M = 1 or N = 1 runs gemv kernels), in log2
  // distance with K weighted 4x (K decides split-K); without one in the class, the nearest of
  // the type. A shape measured without a model (its kernel reproduced by no model of the family)
  // is named as such.
  const int align = type == "tf32" || type == "fp32" ? 4 : 8;
  auto shape_class = [align](std::size_t m, std::size_t n, std::size_t k) {
    return (m == 1 || n == 1 ? 1 : 0) | (k % align == 0 ? 2 : 0) | (n % align == 0 ? 4 : 0) |
           (m % align == 0 ? 8 : 0);
  };
  const int cls = shape_class(M, N, K);
  const ProfileEntry* best = nullptr;
  const ProfileEntry* best_any = nullptr;
  const ProfileEntry* unmodelled = nullptr;
  double best_d = std::numeric_limits<double>::infinity(), any_d = best_d;
  auto l2 = [](std::size_t x) { return std::log2(static_cast<double>(x < 1 ? 1 : x)); };
  for (const ProfileEntry& e : profile.entries) {
    if (e.type != type) continue;
    if (e.model.empty()) {
      if (e.M == M && e.N == N && e.K == K) unmodelled = &e;
      continue;
    }
    const double d =
        4 * std::fabs(l2(e.K) - l2(K)) + std::fabs(l2(e.M) - l2(M)) + std::fabs(l2(e.N) - l2(N));
    if (d < any_d) {
      any_d = d;
      best_any = &e;
    }
    if (shape_class(e.M, e.N, e.K) == cls && d < best_d) {
      best_d = d;
      best = &e;
    }
  }
  const bool in_class = best != nullptr;
  if (!in_class) {
    best = best_any;
    best_d = any_d;
  }
  // A verified entry of the shape holds for the target GPU where entries_hold says so.
  const bool exact_entry = best != nullptr && best_d == 0;
  const bool verified_entry = exact_entry && entries_hold(profile, m.gpu, type, M, N, K, hold_why);
  const std::string entry_note =
      exact_entry && !verified_entry
          ? "verified shape on " + eg + " (" + best->model + "), not for " +
                (m.gpu.empty() ? std::string("every sm90 GPU") : m.gpu) + ": " + hold_why + "; "
          : "";
  // A launch record whose family rule is not verified (for this output type): the rule, named
  // as unverified, unless the shape itself holds a verified model.
  if (!verified_entry && lr.status != LaunchRule::Status::none) {
    take(lr.model);
    r.measured = false;
    r.from = entry_note + lr.why;
    return r;
  }
  const std::string launch_note =
      entry_note + (rec != nullptr && !verified_entry ? lr.why + "; " : "");
  if (best == nullptr) {
    throw InputError("--accum " + m.name + ": " + launch_note +
                     "no probed cuBLASLt model for input type " + type + " in " + profile.source +
                     " (the compiled-in profile covers bf16, fp16, tf32 and fp32)");
  }
  take(best->model);
  r.measured = verified_entry;
  if (r.measured) {
    r.from = "verified shape " + best->type + " " + shape_name(best->M, best->N, best->K) + ": " +
             best->model;
  } else {
    r.from = launch_note +
             std::string(unmodelled != nullptr
                             ? "this shape was measured (kernel " + unmodelled->kernel +
                                   ") and no model of exmy's family reproduced it; "
                             : "") +
             "nearest modelled shape " +
             (in_class ? "of its alignment class "
                       : "(none in its "
                         "alignment class) ") +
             best->type + " " + shape_name(best->M, best->N, best->K) +
             (best->kernel.empty() ? "" : " (kernel " + best->kernel + ")") + ": " + best->model;
  }
  return r;
}

std::string unverified_note(const std::string& who, const std::string& accum, const ShapeModel& s,
                            std::size_t M, std::size_t N, std::size_t K, const std::string& type) {
  return who + ": warning: --accum " + accum + " " + type + " " + shape_name(M, N, K) +
         " lies outside the verified set (shapes checked bit for bit against the library); "
         "applied rule: " +
         s.from;
}

}  // namespace exmy::gemm
