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
#include "gpu/optim/optim.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;
using optim::Family;

// The 16-bit code of a value of storage st: RN, which is the CPU's to_storage on the way in.
std::uint16_t encode16(Storage st, float x) {
  return st == Storage::bf16 ? native::bf16_from_f32(x) : native::f16_from_f32(x);
}
float decode16(Storage st, std::uint16_t c) {
  return st == Storage::bf16 ? native::f32_from_bf16(c) : native::f32_from_f16(c);
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
    const Family f = c.opt.entry->family;
    // bf16/fp16 parameters and gradients live on the device as 16-bit codes; so do torch's
    // Adam/SGD states (the parameters' dtype), while bitsandbytes' absmax and fallback states
    // stay fp32.
    param16_ = c.st != Storage::f32 &&
               (f == Family::adam || f == Family::sgd || f == Family::adam8 ||
                f == Family::momentum8 || f == Family::bnb1 || f == Family::ademamix);
    state16_ = c.st != Storage::f32 && (f == Family::adam || f == Family::sgd);
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
    const optim::Config& c = c_;
    const optim::Hyper& h = c.hyper;
    const bool decoupled = c.opt.entry->decoupled;
    const bool fused =
        c.variant == "torch-fused" || h.adam.kernels == native::TorchKernels::cuda_fused;
    float rms = 0.0f;
    switch (c.opt.entry->family) {
      case Family::adam:
        if (state16_) {
          adam_step(h.adam, decoupled, fused, c.st, t, p_dev_->as<std::uint16_t>(),
                    g_dev_->as<std::uint16_t>(), u16("state1"), u16("state2"), n_);
        } else {
          adam_step(h.adam, decoupled, fused, t, p_dev_->as<float>(), g_dev_->as<float>(),
                    f32("state1"), f32("state2"), n_);
        }
        break;
      case Family::sgd:
        if (state16_) {
          sgd_step(h.sgd, c.st, t, p_dev_->as<std::uint16_t>(), g_dev_->as<std::uint16_t>(),
                   u16("state1"), n_);
        } else {
          sgd_step(h.sgd, t, p_dev_->as<float>(), g_dev_->as<float>(), f32("state1"), n_);
        }
        break;
      case Family::adam8: {
        const native::Bnb8Scalars s = optim::bnb8_scalars(h.adam, t, c.variant == "torch-order");
        if (param16_) {
          bnb_adam8_step(s, c.st, p_dev_->as<std::uint16_t>(), g_dev_->as<std::uint16_t>(),
                         bnb_state(), n_);
        } else {
          bnb_adam8_step(s, p_dev_->as<float>(), g_dev_->as<float>(), bnb_state(), n_);
        }
        break;
      }
      case Family::momentum8: {
        const native::Bnb8Scalars s = optim::bnb8_scalars(h.adam, t, false);
        if (param16_) {
          bnb_momentum8_step(s, c.st, p_dev_->as<std::uint16_t>(), g_dev_->as<std::uint16_t>(),
                             bnb_state(), n_);
        } else {
          bnb_momentum8_step(s, p_dev_->as<float>(), g_dev_->as<float>(), bnb_state(), n_);
        }
        break;
      }
      case Family::bnb1: {
        const native::Bnb8Scalars s = optim::bnb8_scalars(h.adam, t, false);
        const native::Bnb1Op op = c.opt.entry->bnb_op;
        if (param16_) {
          bnb1_step(s, op, c.st, p_dev_->as<std::uint16_t>(), g_dev_->as<std::uint16_t>(),
                    bnb_state(), n_);
        } else {
          bnb1_step(s, op, p_dev_->as<float>(), g_dev_->as<float>(), bnb_state(), n_);
        }
        break;
      }
      case Family::ademamix: {
        const native::Bnb8Scalars s = optim::bnb8_scalars(h.adam, t, false);
        if (param16_) {
          bnb_ademamix_step(s, c.st, p_dev_->as<std::uint16_t>(), g_dev_->as<std::uint16_t>(),
                            bnb_state(), n_);
        } else {
          bnb_ademamix_step(s, p_dev_->as<float>(), g_dev_->as<float>(), bnb_state(), n_);
        }
        break;
      }
      case Family::stable:
        rms = stable_adamw_step(h.adam, t, p_dev_->as<float>(), g_dev_->as<float>(), f32("state1"),
                                f32("state2"), n_);
        break;
      case Family::split_adam:
        split_adam_step(h.adam, decoupled, t, c.seed, c.opt.split, array("hi").as<std::uint16_t>(),
                        array("extra").as<std::uint32_t>(), g_dev_->as<float>(), f32("state1"),
                        f32("state2"), n_);
        break;
      case Family::split_sgd:
        split_sgd_step(h.sgd, t, c.seed, c.opt.split, array("hi").as<std::uint16_t>(),
                       array("extra").as<std::uint32_t>(), g_dev_->as<float>(), f32("state1"), n_);
        break;
    }
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
  float* f32(const char* file) const { return array(file).as<float>(); }
  std::uint16_t* u16(const char* file) const { return array(file).as<std::uint16_t>(); }

  Bnb8DeviceState bnb_state() const {
    const optim::Bnb8State& b = s_.bnb;
    Bnb8DeviceState d;
    d.block = b.block;
    d.is_8bit = b.is_8bit;
    if (b.is_8bit) {
      d.q1 = array("state1").as<std::uint8_t>();
      d.absmax1 = f32("absmax1");
      if (b.two_states) {
        d.q2 = array("state2").as<std::uint8_t>();
        d.absmax2 = f32("absmax2");
      }
    } else {
      d.s1 = f32("state1");
      if (b.two_states) d.s2 = f32("state2");
    }
    return d;
  }

  const optim::Config& c_;
  std::span<float> p_;
  optim::State& s_;
  std::size_t n_;
  bool param16_ = false;  // p and g as 16-bit codes
  bool state16_ = false;  // the fp32 state arrays as 16-bit codes too (torch Adam/SGD)
  bool stepped_ = false;
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
