// The inputs of `exmy verify --backend ... --depth ci` (docs/SEMANTICS.md 13.5.1): TestFloat-style
// tables of fp32 inputs designed from the bugs casts have, each labelled with its class, then
// weighted random inputs from a printed seed, laid out in backend calls. Under sr:R every designed
// input is placed at element indices whose Philox word (SEMANTICS 3.2) lies at 0, at the maximum,
// at the rounding boundary of that input and one below it, so the words that decide a stochastic
// rounding are exercised at their edges, not only at random.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::verify {

// One backend call: element i of `x` is cast with the call's seed at element index i.
struct DesignedCall {
  std::uint64_t seed = 0;
  std::vector<std::uint32_t> x;     // fp32 bit patterns
  std::vector<std::uint8_t> input;  // input class of each element (index into input_classes)
  std::vector<std::uint8_t> word;   // sr word class of each element (index into word_classes)
};

struct DesignedSweep {
  std::vector<std::string> input_classes;  // "tie (subnormal result)", "overflow edge", ...
  std::vector<std::string> word_classes;   // sr only: "word 0", ..., "word random"
  std::vector<DesignedCall> calls;
  std::uint64_t random_seed = 0;  // the seed of the weighted random inputs (printed)
  std::uint64_t designed = 0;     // designed elements (the rest are random)
};

struct SweepSize {
  std::size_t call_elements = std::size_t{1} << 22;    // elements per backend call
  std::size_t random_elements = std::size_t{1} << 22;  // weighted random inputs in all
};

// The designed inputs of a cast fp32 -> f under r, then `size.random_elements` weighted random
// inputs drawn from `seed`; calls use the seeds seed, seed + 1, ... Deterministic: the same
// arguments give the same calls on every machine.
DesignedSweep designed_cast_sweep(const FloatFormat& f, const Rounding& r, std::uint64_t seed,
                                  const SweepSize& size = {});

}  // namespace exmy::verify
