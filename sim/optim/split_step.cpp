// Split-format tensors and the Adam/SGD steps on them (docs/SEMANTICS.md 6, 9.6).
#include <cstdlib>
#include <string_view>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::optim {

SplitFormat parse_split_format(const std::string& name) {
  SplitFormat f;
  std::string s = name;
  const std::string sr_suffix = ":sr";
  if (s.size() > sr_suffix.size() && s.compare(s.size() - 3, 3, sr_suffix) == 0) {
    f.sr = true;
    s.resize(s.size() - 3);
  }
  const auto plus = s.find('+');
  const std::string base = plus == std::string::npos ? s : s.substr(0, plus);
  if (base == "bf16") {
    f.hi = Storage::bf16;
  } else if (base == "fp16") {
    f.hi = Storage::f16;
  } else if (base == "e5m2") {
    f.hi = Storage::f16;
    f.fp8 = true;
  } else {
    throw InputError("split format '" + name + "': expected bf16+K, fp16+K or e5m2+K[:sr]");
  }
  if (plus == std::string::npos || plus + 1 >= s.size()) {
    throw InputError("split format '" + name + "': missing +K (extra bits)");
  }
  // K through the one number parser: digits only (strtol took " 8", "+8" and "-0").
  const int kmax = f.hi == Storage::bf16 ? 16 : f.fp8 ? 21 : 13;
  const std::string_view kt = std::string_view(s).substr(plus + 1);
  const bool digits =
      kt.size() <= 2 && kt.find_first_not_of("0123456789") == std::string_view::npos;
  const long k = digits ? static_cast<long>(number::parse_u64(kt, "K", 99, false)) : -1;
  if (k < 0 || k > kmax) {
    throw InputError("split format '" + name + "': K must be an integer 0.." +
                     std::to_string(kmax) + " (fp32 holds " + std::to_string(kmax) +
                     " bits beyond the stored part's mantissa)");
  }
  f.k = static_cast<int>(k);
  if (f.sr && f.k == 0) throw InputError("split format '" + name + "': :sr needs K >= 1");
  return f;
}

std::string split_format_name(const SplitFormat& f) {
  return std::string(f.hi == Storage::bf16 ? "bf16"
                     : f.fp8               ? "e5m2"
                                           : "fp16") +
         "+" + std::to_string(f.k) + (f.sr ? ":sr" : "");
}

SplitTensor split_tensor(std::span<const float> x, const SplitFormat& f, std::uint64_t seed) {
  SplitTensor t;
  t.fmt = f;
  const int w = native::split_field_bits(f);
  t.hi.resize(x.size());
  t.extra.assign(native::split_words(x.size(), w), 0u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint32_t field = 0;
    native::split_value(x[i], f, native::split_sr_word(seed, 0, i), t.hi[i], field);
    native::field_put(t.extra.data(), i, w, field);
  }
  return t;
}

std::vector<float> join_tensor(const SplitTensor& t) {
  const int w = native::split_field_bits(t.fmt);
  std::vector<float> out(t.hi.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = native::split_join(t.hi[i], native::field_get(t.extra.data(), i, w), t.fmt);
  }
  return out;
}

namespace {
void check_split(const SplitTensor& p, std::size_t g, std::size_t s) {
  const int w = native::split_field_bits(p.fmt);
  if (p.extra.size() != native::split_words(p.hi.size(), w) || g != p.hi.size() ||
      s != p.hi.size()) {
    throw InputError("split step: parameter, extra-bit words, gradient and state sizes differ");
  }
}
}  // namespace

void split_adam_step(const AdamHyper& h, bool decoupled, long step, std::uint64_t seed,
                     SplitTensor& p, std::span<const float> g, std::span<float> m,
                     std::span<float> v) {
  check_split(p, g.size(), m.size());
  check_split(p, g.size(), v.size());
  const native::TorchAdamScalars s = torch_adam_scalars(h, step, decoupled);
  const int w = native::split_field_bits(p.fmt);
  for (std::size_t i = 0; i < p.hi.size(); ++i) {
    std::uint32_t field = native::field_get(p.extra.data(), i, w);
    native::split_adam_element(s, p.fmt, p.hi[i], field, g[i], m[i], v[i],
                               native::split_sr_word(seed, static_cast<std::uint64_t>(step), i));
    native::field_put(p.extra.data(), i, w, field);
  }
}

void split_sgd_step(const SgdHyper& h, long step, std::uint64_t seed, SplitTensor& p,
                    std::span<const float> g, std::span<float> buf) {
  check_split(p, g.size(), buf.size());
  const native::TorchSgdScalars s = torch_sgd_scalars(h);
  const int w = native::split_field_bits(p.fmt);
  for (std::size_t i = 0; i < p.hi.size(); ++i) {
    std::uint32_t field = native::field_get(p.extra.data(), i, w);
    native::split_sgd_element(s, p.fmt, p.hi[i], field, g[i], buf[i], step == 1,
                              native::split_sr_word(seed, static_cast<std::uint64_t>(step), i));
    native::field_put(p.extra.data(), i, w, field);
  }
}

}  // namespace exmy::optim
