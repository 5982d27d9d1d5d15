// The input of a CPU quantizer (quant::quantize, quant::bnb4_quantize): n fp32 values, or n 16-bit
// codes (fp16 or bf16 bit patterns as a .npy file stores them: two bytes each, little-endian, at
// any alignment) whose values are their exact widening to fp32. A code is widened where the
// quantizer reads it, through a table of the 65536 values native::to_float gives (the values an
// fp32 copy of the input would hold), so a 16-bit input is never copied to fp32 in memory: the
// CLI passes the mapped file (issue 36's memory bound, docs/SEMANTICS.md 11.0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"

namespace exmy::quant {

class Values {
 public:
  Values() = default;
  // fp32 values (not copied: they must outlive this object).
  Values(std::span<const float> x) : f32_(x.data()), n_(x.size()) {}     // NOLINT: implicit
  Values(const std::vector<float>& x) : f32_(x.data()), n_(x.size()) {}  // NOLINT: implicit
  // n codes of format f (16 bits or narrower), two bytes each at `codes` (not copied).
  Values(const std::uint8_t* codes, std::size_t n, const FloatFormat& f)
      : codes_(codes), n_(n), table_(std::make_shared<std::vector<float>>(std::size_t{1} << 16)) {
    for (std::size_t u = 0; u < table_->size(); ++u) (*table_)[u] = native::to_float(f, u);
  }
  std::size_t size() const { return n_; }
  // The fp32 values, or nullptr when this holds codes (hot loops read them without the test of
  // operator[]).
  const float* f32_data() const { return f32_; }
  bool empty() const { return n_ == 0; }
  float operator[](std::size_t i) const {
    if (f32_ != nullptr) return f32_[i];
    std::uint16_t u;
    std::memcpy(&u, codes_ + 2 * i, 2);
    return (*table_)[u];
  }

 private:
  const float* f32_ = nullptr;
  const std::uint8_t* codes_ = nullptr;
  std::size_t n_ = 0;
  std::shared_ptr<std::vector<float>> table_;
};

}  // namespace exmy::quant
