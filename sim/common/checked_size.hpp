// Every size product of an array exmy allocates or writes (M·N, rows·cols, count·item size) goes
// through here: a product that wraps size_t, or that asks for more memory than this machine has
// (RAM and swap together), is an InputError naming the array and its shape instead of a wrapped
// small buffer (and a crash on the first out-of-range write) or std::bad_alloc.
#pragma once

#include <sys/sysinfo.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "sim/common/error.hpp"

namespace exmy {

namespace checked_detail {
inline std::string shape_text(const std::size_t* d, std::size_t n) {
  std::string s = "(";
  for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (n == 1 ? ",)" : ")");
}
inline std::size_t product(const std::size_t* d, std::size_t n, std::size_t item,
                           const std::string& what) {
  std::size_t p = item;
  bool wrapped = false;
  for (std::size_t i = 0; i < n; ++i) wrapped |= __builtin_mul_overflow(p, d[i], &p);
  // A zero dimension makes the array empty whatever the others are.
  for (std::size_t i = 0; i < n; ++i) {
    if (d[i] == 0) return 0;
  }
  if (wrapped) {
    throw InputError(what + ": shape " + shape_text(d, n) +
                     " has more elements than this machine can address (the size overflows 64 "
                     "bits)");
  }
  return p;
}
}  // namespace checked_detail

// Elements of an array of this shape (1 for a 0-d shape); InputError naming `what` on overflow.
inline std::size_t checked_count(const std::vector<std::size_t>& shape, const std::string& what) {
  return checked_detail::product(shape.data(), shape.size(), 1, what);
}
inline std::size_t checked_count(std::initializer_list<std::size_t> shape,
                                 const std::string& what) {
  return checked_detail::product(shape.begin(), shape.size(), 1, what);
}
// Bytes of an array of this shape and item size; InputError naming `what` on overflow.
inline std::size_t checked_bytes(const std::vector<std::size_t>& shape, std::size_t item,
                                 const std::string& what) {
  return checked_detail::product(shape.data(), shape.size(), item, what);
}

// Refuses an allocation of `bytes` that this machine cannot hold (more than RAM plus swap):
// one line naming `what` instead of std::bad_alloc or an OOM kill partway through.
inline void check_allocation(std::size_t bytes, const std::string& what) {
  struct sysinfo si {};
  if (::sysinfo(&si) != 0) return;
  const unsigned long long total =
      (static_cast<unsigned long long>(si.totalram) + si.totalswap) * si.mem_unit;
  if (bytes > total) {
    throw InputError(what + ": needs " + std::to_string(bytes >> 20) + " MiB, more than this " +
                     "machine's memory (" + std::to_string(total >> 20) + " MiB with swap)");
  }
}

// Bytes of a shape (checked_bytes) that must also fit in memory (check_allocation).
inline std::size_t checked_alloc_bytes(const std::vector<std::size_t>& shape, std::size_t item,
                                       const std::string& what) {
  const std::size_t b = checked_bytes(shape, item, what);
  check_allocation(b, what + " " + checked_detail::shape_text(shape.data(), shape.size()));
  return b;
}

}  // namespace exmy
