// The golden corpus's case makers, shared by the suites' files (sim/golden/corpus.cpp writes and
// checks corpora; sim/golden/corpus_quant_cases.cpp holds the quantize suite's cases).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/npy.hpp"

namespace exmy::golden::detail {

// One case: where it lives, what case.json says, its inputs and expected outputs.
struct Case {
  std::string id;                                              // "<suite>/<...>"
  std::vector<std::pair<std::string, std::string>> fields;     // case.json, in order
  std::vector<std::pair<std::string, io::NpyArray>> inputs;    // written beside case.json
  std::vector<std::pair<std::string, io::NpyArray>> expected;  // expected/<name>
};
// A case is built lazily (a shard builds only its own).
struct CaseMaker {
  std::string id;
  std::function<Case()> make;
};

// Random values the same on every platform (corpus_quant_cases.cpp says how).
float uniform_pm1(std::mt19937_64& rng);
float bell(std::mt19937_64& rng);
std::uint64_t fnv1a(const std::string& s);

// The quantize suite: exmy quantize cases (section 7) and bitsandbytes 4-bit cases (7.14).
void quant_cases(std::uint64_t seed, std::vector<CaseMaker>& out);
void bnb4_cases(std::uint64_t seed, std::vector<CaseMaker>& out);

}  // namespace exmy::golden::detail
