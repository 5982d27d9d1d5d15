// An optimizer entry's state (sim/optim/registry.hpp, docs/SEMANTICS.md 9.9): the zero state,
// the arrays saved in a run's directory and read back for a continued run (shapes checked), the
// split parameters' final values and the canonical NaNs of each profile (9.1). Kept apart from
// the registry's table (sim/optim/registry.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {
namespace {

// One state array, which must have exactly the shape save_state writes for it (the same element
// count in another shape is a different layout, not the saved state).
template <typename T>
void load_array(const std::string& path, std::vector<T>& v, const std::vector<std::size_t>& shape,
                std::vector<T> (*conv)(const io::NpyArray&, const std::string&)) {
  const io::NpyArray a = io::read_npy(path);
  io::require_c_order(a, path);
  std::vector<T> got = conv(a, path);
  if (got.size() != v.size()) {
    throw InputError(path + ": expected " + std::to_string(v.size()) + " elements, got " +
                     std::to_string(got.size()));
  }
  if (a.shape != shape) {
    std::string want;
    for (const std::size_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(path + ": expected shape (" + want + (shape.size() == 1 ? ",)" : ")") +
                     " as saved by exmy step");
  }
  v = std::move(got);
}

// The shape an array is saved with: the parameters' (or 1-d), with a leading `stack` rows.
std::vector<std::size_t> saved_shape(const StateArray& a, const std::vector<std::size_t>& shape,
                                     std::size_t size) {
  if (!a.shape.empty()) return a.shape;
  const std::size_t k = static_cast<std::size_t>(a.stack);
  if (k <= 1) return a.param_shaped ? shape : std::vector<std::size_t>{size};
  std::vector<std::size_t> out{k};
  if (a.param_shaped) {
    out.insert(out.end(), shape.begin(), shape.end());
  } else {
    out.push_back(size / k);
  }
  return out;
}

}  // namespace

State init_state(const Config& c, std::span<const float> p) {
  State s;
  c.opt.entry->init(c, p, s);
  return s;
}

void load_state(const Config& c, const std::string& dir, std::span<const float> p,
                const std::string& params_path, const std::vector<std::size_t>& shape, State& s) {
  for (const StateArray& a : c.opt.entry->arrays(c, s)) {
    const std::string path = dir + "/" + a.file + ".npy";
    std::visit(
        [&](auto* v) {
          using T = typename std::remove_reference_t<decltype(*v)>::value_type;
          const std::vector<std::size_t> want = saved_shape(a, shape, v->size());
          if constexpr (std::is_same_v<T, float>) {
            load_array<T>(path, *v, want, io::as_f32);
          } else if constexpr (std::is_same_v<T, std::uint8_t>) {
            load_array<T>(path, *v, want, io::as_u8);
          } else if constexpr (std::is_same_v<T, std::uint16_t>) {
            load_array<T>(path, *v, want, io::as_u16);
          } else {
            load_array<T>(path, *v, want, io::as_u32);
          }
        },
        a.data);
  }
  if (!c.opt.entry->split) return;
  // The split state is authoritative; --params must be its joined values (params.npy of the run
  // that wrote the state).
  const std::vector<float> joined = join_tensor(s.split);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (native::f32_bits(joined[i]) != native::f32_bits(p[i]) &&
        !(std::isnan(joined[i]) && std::isnan(p[i]))) {
      throw InputError(params_path + ": element " + std::to_string(i) +
                       " differs from the split state in " + dir + " (pass that run's params.npy)");
    }
  }
}

void save_state(const Config& c, const std::string& dir, const std::vector<std::size_t>& shape,
                State& s) {
  for (const StateArray& a : c.opt.entry->arrays(c, s)) {
    std::visit(
        [&](auto* v) {
          // Written from the state vector itself (no NpyArray copy of a large state).
          using T = typename std::remove_pointer_t<decltype(v)>::value_type;
          const char* descr = std::is_same_v<T, float>           ? io::kDescrF32
                              : std::is_same_v<T, std::uint8_t>  ? io::kDescrU8
                              : std::is_same_v<T, std::uint16_t> ? io::kDescrU16
                                                                 : io::kDescrU32;
          io::NpyFileWriter w(dir + "/" + a.file + ".npy", descr, saved_shape(a, shape, v->size()));
          w.write(v->data(), v->size() * sizeof(T));
          w.commit();
        },
        a.data);
  }
}

void final_params(const Config& c, const State& s, std::span<float> p) {
  if (!c.opt.entry->split) return;
  const std::vector<float> joined = join_tensor(s.split);
  std::copy(joined.begin(), joined.end(), p.begin());
}

// x86-64's default NaN (quiet, sign set, zero payload) in each storage width: fp32 0xFFC00000,
// its bf16 upper half 0xFFC0, and the fp16 with the same fields 0xFE00 (sign, all-ones exponent,
// quiet bit). It is what torch CPU on x86-64 writes for a NaN its step creates (0*inf, inf-inf).
constexpr std::uint32_t kStepNan32 = 0xFFC00000u;
constexpr std::uint16_t kStepNanBf16 = 0xFFC0u;
constexpr std::uint16_t kStepNanF16 = 0xFE00u;
// e5m2 is fp16's top byte: the same NaN's top 8 bits.
constexpr std::uint16_t kStepNanE5m2 = kStepNanF16 >> 8;

// Under the CUDA profiles (`--compat bnb-cuda`, `torch-cuda`, `torch-cuda-foreach`,
// `torch-cuda-fused`, and `--variant torch-fused`) the NaNs are the GPU's: 0x7FFFFFFF from its
// fp32 arithmetic and MUFU, a bf16 tensor's 0x7FFF (0x7FFF0000 as fp32), an fp16 tensor's 0x7FFF,
// which CUDA widens to 0x7FFFFFFF (docs/SEMANTICS.md 9.1).
constexpr std::uint32_t kCudaNan32 = 0x7FFFFFFFu;
constexpr std::uint32_t kCudaNanBf16AsF32 = 0x7FFF0000u;

void canonical_nans(const Config& c, State& s, std::span<float> p) {
  const bool cuda = c.hyper.adam.bnb == native::BnbKernels::cuda_sm90 ||
                    c.hyper.adam.kernels != native::TorchKernels::cpu ||
                    c.hyper.sgd.kernels != native::TorchKernels::cpu || c.variant == "torch-fused";
  const float nan32 = native::f32_from_bits(cuda ? kCudaNan32 : kStepNan32);
  // A 16-bit tensor's NaN, as the fp32 value the files hold.
  const float nan16 =
      cuda && c.st == Storage::bf16 ? native::f32_from_bits(kCudaNanBf16AsF32) : nan32;
  const bool states16 = c.st != Storage::f32 && c.opt.entry->def->states_param_dtype;
  const auto fix = [&](std::span<float> v, float nan) {
    for (float& x : v) {
      if (std::isnan(x)) x = nan;
    }
  };
  fix(p, nan16);
  for (const StateArray& a : c.opt.entry->arrays(c, s)) {
    // torch's Adam/SGD states have the parameters' dtype.
    if (auto* const* f = std::get_if<std::vector<float>*>(&a.data))
      fix(**f, states16 ? nan16 : nan32);
  }
  if (!c.opt.entry->split) return;
  // Split parameters: the 16-bit part is a bf16/fp16 code; a NaN keeps its extra bits (they are
  // below the 16-bit part and carry no sign).
  const bool bf16 = s.split.fmt.hi == Storage::bf16, fp8 = s.split.fmt.fp8;
  for (std::uint16_t& h : s.split.hi) {
    const bool nan = bf16  ? (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0
                     : fp8 ? (h & 0x7Cu) == 0x7Cu && (h & 0x03u) != 0
                           : (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0;
    if (nan) h = bf16 ? kStepNanBf16 : fp8 ? kStepNanE5m2 : kStepNanF16;
  }
}

}  // namespace exmy::optim
