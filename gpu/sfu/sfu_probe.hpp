// `exmy probe sfu --device cuda`: measures the approximate instructions of the GPU's special
// function unit into the tables of sim/sfu/sfu_tables.hpp and checks the models of
// sim/native/sfu_sm90.hpp against the instructions on all 2^32 inputs (docs/SEMANTICS.md 17).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/sfu/sfu_tables.hpp"

namespace exmy::gpu {

// Fills every table of `b` from the GPU's instructions (S derived from lg2 at exponent −2), and
// packs S. Throws CudaError / InputError without a GPU.
void sfu_measure(sfu::Bundle& b);

struct SfuCheck {
  std::string instruction;       // PTX name
  std::uint64_t inputs = 0;      // 2^32
  std::uint64_t mismatches = 0;  // model bits != hardware bits
  std::uint64_t digest = 0;      // sum over x of mix(x, hardware(x)) mod 2^64 (sfu_digest_term)
  std::vector<std::uint32_t> examples;  // up to 8 × (x, hardware, model)
};

// Every instruction's model against the hardware on all 2^32 inputs; `progress(done, total)` is
// called between chunks.
std::vector<SfuCheck> sfu_verify(const sfu::Bundle& b,
                                 const std::function<void(int, int)>& progress);

// CUDA's fp32 powf (libdevice, compiled into this probe) against sim/native/libdevice_powf.hpp:
// for y = 2, 0.5, −1.5 and 1000 every one of the 2^32 x, then 2^32 pseudo-random (x, y) bit
// patterns (splitmix64 of the index). One SfuCheck per pass, named "powf(x, Y)" / "powf(x, y)".
std::vector<SfuCheck> sfu_verify_powf(const std::function<void(int, int)>& progress);

// The non-FTZ and division instructions against their compositions in sim/native/sfu_sm90.hpp:
// rcp.approx.f32 and sqrt.approx.f32 on all 2^32 inputs; div.approx.ftz.f32, div.approx.f32,
// div.full.f32 and div.full.ftz.f32 on all 2^32 a with b = 3, and on 2^32 random (a, b) bit
// patterns each.
std::vector<SfuCheck> sfu_verify_composites(const std::function<void(int, int)>& progress);

}  // namespace exmy::gpu
