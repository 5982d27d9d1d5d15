// The range of worker threads exmy runs, for --threads and OMP_NUM_THREADS alike: an OpenMP team
// of 100000 threads is not created (libgomp crashes after "Thread creation failed"), so the
// environment's value is held to the range the --threads options accept.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace exmy {

inline constexpr int kMaxThreads = 4096;

// OMP_NUM_THREADS's first entry ("8" or "8,4", as OpenMP reads a nested list) when it is a
// positive number, clamped to kMaxThreads; nullopt when unset or not a positive number.
inline std::optional<int> env_threads(const char* text) {
  if (text == nullptr) return std::nullopt;
  while (*text == ' ' || *text == '\t') ++text;
  if (*text < '0' || *text > '9') return std::nullopt;
  unsigned long long v = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    v = v * 10 + static_cast<unsigned>(*text - '0');
    if (v > static_cast<unsigned long long>(kMaxThreads)) v = kMaxThreads + 1ull;
  }
  if (v == 0) return std::nullopt;
  return static_cast<int>(v > static_cast<unsigned long long>(kMaxThreads) ? kMaxThreads : v);
}

// Whether OMP_NUM_THREADS asks for more than kMaxThreads (the caller says it once and clamps).
inline bool env_threads_above_max(const char* text) {
  if (text == nullptr) return false;
  while (*text == ' ' || *text == '\t') ++text;
  unsigned long long v = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    v = v * 10 + static_cast<unsigned>(*text - '0');
    if (v > static_cast<unsigned long long>(kMaxThreads)) return true;
  }
  return false;
}

}  // namespace exmy
