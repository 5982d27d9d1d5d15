// The GPU stepper of optim_host.hpp: the registry entry's state arrays live in device buffers
// for the whole run; each step uploads the gradient and runs the family's kernel of optim.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/common/launch.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/optim/launchers.hpp"
#include "gpu/optim/optim.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;

// The 16-bit code of a value of storage st: RN, which is the CPU's to_storage on the way in.
std::uint16_t encode16(Storage st, float x) {
  return st == Storage::bf16 ? native::bf16_from_f32(x) : native::f16_from_f32(x);
}
float decode16(Storage st, std::uint16_t c) {
  return st == Storage::bf16 ? native::f32_from_bf16(c) : native::f32_from_f16(c);
}

// ---- the core families' launchers (launchers.hpp) ---------------------------------------------
float* f32(const StepLaunch& l, const char* file) {
  return static_cast<float*>(l.array(file));
}
std::uint16_t* u16(const StepLaunch& l, const char* file) {
  return static_cast<std::uint16_t*>(l.array(file));
}
float* p32(const StepLaunch& l) {
  return static_cast<float*>(l.p);
}
const float* g32(const StepLaunch& l) {
  return static_cast<const float*>(l.g);
}
std::uint16_t* p16(const StepLaunch& l) {
  return static_cast<std::uint16_t*>(l.p);
}
const std::uint16_t* g16(const StepLaunch& l) {
  return static_cast<const std::uint16_t*>(l.g);
}
bool fused(const optim::Config& c) {
  return c.variant == "torch-fused" || c.hyper.adam.kernels == native::TorchKernels::cuda_fused;
}

Bnb8DeviceState bnb_state(const StepLaunch& l) {
  const optim::Bnb8State& b = l.s.bnb;
  Bnb8DeviceState d;
  d.block = b.block;
  d.is_8bit = b.is_8bit;
  if (b.is_8bit) {
    d.q1 = static_cast<std::uint8_t*>(l.array("state1"));
    d.absmax1 = f32(l, "absmax1");
    if (b.two_states) {
      d.q2 = static_cast<std::uint8_t*>(l.array("state2"));
      d.absmax2 = f32(l, "absmax2");
    }
  } else {
    d.s1 = f32(l, "state1");
    if (b.two_states) d.s2 = f32(l, "state2");
  }
  return d;
}

float launch_adam(const StepLaunch& l) {
  const optim::Config& c = l.c;
  const bool dec = c.opt.entry->decoupled;
  const bool ams = c.hyper.adam.amsgrad;  // max_exp_avg_sq: state3
  if (l.states16) {
    adam_step(c.hyper.adam, dec, fused(c), c.st, l.t, p16(l), g16(l), u16(l, "state1"),
              u16(l, "state2"), l.n, nullptr, ams ? u16(l, "state3") : nullptr);
  } else {
    adam_step(c.hyper.adam, dec, fused(c), l.t, p32(l), g32(l), f32(l, "state1"), f32(l, "state2"),
              l.n, nullptr, ams ? f32(l, "state3") : nullptr);
  }
  return 0.0f;
}
float launch_sgd(const StepLaunch& l) {
  if (l.states16) {
    sgd_step(l.c.hyper.sgd, l.c.st, l.t, p16(l), g16(l), u16(l, "state1"), l.n);
  } else {
    sgd_step(l.c.hyper.sgd, l.t, p32(l), g32(l), f32(l, "state1"), l.n);
  }
  return 0.0f;
}
float launch_adam8(const StepLaunch& l) {
  const native::Bnb8Scalars s =
      optim::bnb8_scalars(l.c.hyper.adam, l.t, l.c.variant == "torch-order");
  if (l.codes16) {
    bnb_adam8_step(s, l.c.st, p16(l), g16(l), bnb_state(l), l.n);
  } else {
    bnb_adam8_step(s, p32(l), g32(l), bnb_state(l), l.n);
  }
  return 0.0f;
}
float launch_momentum8(const StepLaunch& l) {
  const native::Bnb8Scalars s = optim::bnb8_scalars(l.c.hyper.adam, l.t, false);
  if (l.codes16) {
    bnb_momentum8_step(s, l.c.st, p16(l), g16(l), bnb_state(l), l.n);
  } else {
    bnb_momentum8_step(s, p32(l), g32(l), bnb_state(l), l.n);
  }
  return 0.0f;
}
float launch_bnb1(const StepLaunch& l) {
  const native::Bnb8Scalars s = optim::bnb8_scalars(l.c.hyper.adam, l.t, false);
  const native::Bnb1Op op = l.c.opt.entry->bnb_op;
  if (l.codes16) {
    bnb1_step(s, op, l.c.st, p16(l), g16(l), bnb_state(l), l.n);
  } else {
    bnb1_step(s, op, p32(l), g32(l), bnb_state(l), l.n);
  }
  return 0.0f;
}
float launch_ademamix(const StepLaunch& l) {
  const native::Bnb8Scalars s = optim::bnb8_scalars(l.c.hyper.adam, l.t, false);
  if (l.codes16) {
    bnb_ademamix_step(s, l.c.st, p16(l), g16(l), bnb_state(l), l.n);
  } else {
    bnb_ademamix_step(s, p32(l), g32(l), bnb_state(l), l.n);
  }
  return 0.0f;
}
float launch_stable(const StepLaunch& l) {
  return stable_adamw_step(l.c.hyper.adam, l.t, p32(l), g32(l), f32(l, "state1"), f32(l, "state2"),
                           l.n);
}
float launch_split_adam(const StepLaunch& l) {
  const optim::Config& c = l.c;
  split_adam_step(c.hyper.adam, c.opt.entry->decoupled, l.t, c.seed, c.opt.split, u16(l, "hi"),
                  static_cast<std::uint32_t*>(l.array("extra")), g32(l), f32(l, "state1"),
                  f32(l, "state2"), l.n);
  return 0.0f;
}
float launch_split_sgd(const StepLaunch& l) {
  const optim::Config& c = l.c;
  split_sgd_step(c.hyper.sgd, l.t, c.seed, c.opt.split, u16(l, "hi"),
                 static_cast<std::uint32_t*>(l.array("extra")), g32(l), f32(l, "state1"), l.n);
  return 0.0f;
}

}  // namespace
#define EXMY_OPTIM_FAMILY(N) EXMY_GPU_FAMILY_LAUNCHER(N);
#include "sim/common/optim_families.inc"
#undef EXMY_OPTIM_FAMILY
namespace {

// The table: the core families, then those of cmake/ExmyOptimFamilies.cmake.
StepLauncher find_launcher(std::string_view family) {
  static const std::vector<FamilyLauncher> table = [] {
    std::vector<FamilyLauncher> t = {
        {"adam", launch_adam},           {"sgd", launch_sgd},
        {"adam8", launch_adam8},         {"momentum8", launch_momentum8},
        {"bnb1", launch_bnb1},           {"ademamix", launch_ademamix},
        {"stable", launch_stable},       {"split_adam", launch_split_adam},
        {"split_sgd", launch_split_sgd},
    };
#define EXMY_OPTIM_FAMILY(N) t.push_back(kGpuLauncher_##N);
#include "sim/common/optim_families.inc"
#undef EXMY_OPTIM_FAMILY
    return t;
  }();
  for (const FamilyLauncher& f : table) {
    if (f.family == family) return f.launch;
  }
  throw InputError("--device cuda: no GPU launcher for the optimizer family '" +
                   std::string(family) + "'");
}

class DeviceStepper final : public optim::Stepper {
 public:
  DeviceStepper(const optim::Config& c, std::span<float> p, optim::State& s)
      : c_(c), p_(p), s_(s), n_(p.size()) {
    optim::require_gpu_kernel(c);
    // bnb-cuda's kernels issue the sm_90 MUFU instructions the tables were measured from
    // (sim/native/sfu_sm90.hpp); on another GPU they would compute something else.
    if (c.hyper.adam.bnb == native::BnbKernels::cuda_sm90 && device_capability() != 90) {
      throw InputError(
          "--compat bnb-cuda --device cuda: needs an sm_90 GPU (H100/H200) for its "
          "approximate instructions; this one is " +
          device_name() + " (run it with --device cpu)");
    }
    const optim::FamilyDef& f = *c.opt.entry->def;
    launcher_ = find_launcher(f.name);
    // bf16/fp16 parameters and gradients live on the device as 16-bit codes; so do torch's
    // states (the parameters' dtype), while bitsandbytes' absmax and fallback states stay fp32.
    param16_ = c.st != Storage::f32 && f.param_codes16;
    state16_ = c.st != Storage::f32 && f.states_param_dtype;
    const std::size_t elem = param16_ ? 2 : 4;
    if (param16_) scratch16_.resize(n_);
    // Split entries keep their parameters in the state (hi, extra): p is not uploaded.
    if (!c.opt.entry->split) {
      p_dev_ = std::make_unique<DeviceBuffer>(n_ * elem);
      upload_floats(*p_dev_, p, "--params", param16_);
    }
    g_dev_ = std::make_unique<DeviceBuffer>(n_ * elem);
    for (const optim::StateArray& a : c.opt.entry->arrays(c, s)) {
      std::visit(
          [&](auto* v) {
            using T = typename std::remove_reference_t<decltype(*v)>::value_type;
            const std::size_t bytes = std::is_same_v<T, float> && state16_ ? 2 : sizeof(T);
            auto buf = std::make_unique<DeviceBuffer>(v->size() * bytes);
            if constexpr (std::is_same_v<T, float>) {
              upload_floats(*buf, *v, std::string(a.file) + ".npy", state16_);
            } else {
              buf->upload(v->data(), v->size() * sizeof(T));
            }
            arrays_.emplace_back(a.file, std::move(buf));
          },
          a.data);
    }
  }

  float step(long t, std::span<const float> g) override {
    if (g.size() != n_) {
      throw InputError("gradient: expected " + std::to_string(n_) + " elements, got " +
                       std::to_string(g.size()));
    }
    if (param16_) {
      // The CPU step rounds the gradient to the parameters' dtype first (to_storage).
      for (std::size_t i = 0; i < n_; ++i) scratch16_[i] = encode16(c_.st, g[i]);
      g_dev_->upload(scratch16_.data(), n_ * 2);
    } else {
      g_dev_->upload(g.data(), n_ * 4);
    }
    stepped_ = true;
    const StepLaunch l{c_,
                       s_,
                       t,
                       n_,
                       param16_,
                       state16_,
                       p_dev_ ? p_dev_->get() : nullptr,
                       g_dev_->get(),
                       [this](const char* file) -> void* { return array(file).get(); }};
    const float rms = launcher_(l);
    cuda_check_launch("optimizer step");
    return rms;
  }

  void finish() override {
    // No step ran (every gradient skipped by the loss scaler): the host arrays are the result
    // as they stand (no 16-bit round trip of NaN payloads).
    if (!stepped_) return;
    cuda_check(cudaDeviceSynchronize(), "optimizer steps");
    if (p_dev_) download_floats(*p_dev_, p_, param16_);
    std::size_t k = 0;
    for (const optim::StateArray& a : c_.opt.entry->arrays(c_, s_)) {
      const DeviceBuffer& buf = *arrays_[k++].second;
      std::visit(
          [&](auto* v) {
            using T = typename std::remove_reference_t<decltype(*v)>::value_type;
            if constexpr (std::is_same_v<T, float>) {
              download_floats(buf, *v, state16_);
            } else {
              buf.download(v->data(), v->size() * sizeof(T));
            }
          },
          a.data);
    }
  }

 private:
  // fp32 arrays go up as they are, or as 16-bit codes; a value that is not a code of the
  // parameters' dtype (a hand-edited state) would change on the way: refused, naming it.
  void upload_floats(DeviceBuffer& buf, std::span<const float> v, const std::string& what,
                     bool codes16) {
    if (!codes16) {
      buf.upload(v.data(), v.size() * 4);
      return;
    }
    if (scratch16_.size() < v.size()) scratch16_.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      scratch16_[i] = encode16(c_.st, v[i]);
      if (native::f32_bits(decode16(c_.st, scratch16_[i])) != native::f32_bits(v[i]) &&
          !std::isnan(v[i])) {
        throw InputError(what + ": element " + std::to_string(i) + " is not a " +
                         std::string(optim::dtype_name(c_.st)) +
                         " value (--device cuda holds 16-bit tensors as codes)");
      }
    }
    buf.upload(scratch16_.data(), v.size() * 2);
  }
  void download_floats(const DeviceBuffer& buf, std::span<float> v, bool codes16) {
    if (!codes16) {
      buf.download(v.data(), v.size() * 4);
      return;
    }
    const std::vector<std::uint16_t> codes = buf.download<std::uint16_t>(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = decode16(c_.st, codes[i]);
  }

  const DeviceBuffer& array(const char* file) const {
    for (const auto& [name, buf] : arrays_) {
      if (name == file) return *buf;
    }
    throw InputError(std::string("optimizer state: no array '") + file + "'");
  }
  const optim::Config& c_;
  std::span<float> p_;
  optim::State& s_;
  std::size_t n_;
  bool param16_ = false;  // p and g as 16-bit codes
  bool state16_ = false;  // the fp32 state arrays as 16-bit codes too (torch Adam/SGD)
  bool stepped_ = false;
  StepLauncher launcher_ = nullptr;
  std::unique_ptr<DeviceBuffer> p_dev_, g_dev_;
  std::vector<std::pair<std::string, std::unique_ptr<DeviceBuffer>>> arrays_;
  std::vector<std::uint16_t> scratch16_;
};

}  // namespace

std::unique_ptr<optim::Stepper> optim_stepper(const optim::Config& c, std::span<float> p,
                                              optim::State& s) {
  return std::make_unique<DeviceStepper>(c, p, s);
}

}  // namespace exmy::gpu
