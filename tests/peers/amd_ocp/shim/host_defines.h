// Test-only stand-in for HIP's host_defines.h, so that AMD's host conversion headers
// (amd_hip_ocp_types.h, amd_hip_ocp_host.hpp) compile as plain host C++ with clang >= 18 for the
// comparison program next to this folder. It declares only what those two headers use: the
// __host__/__device__ markers (empty on the host), the __hip_* integer typedefs, and the few
// standard facilities they reach through namespace __hip_internal. Written for exmy; no HIP code.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

#define __host__
#define __device__

typedef std::int8_t __hip_int8_t;
typedef std::uint8_t __hip_uint8_t;
typedef std::int16_t __hip_int16_t;
typedef std::uint16_t __hip_uint16_t;
typedef std::int32_t __hip_int32_t;
typedef std::uint32_t __hip_uint32_t;
typedef std::int64_t __hip_int64_t;
typedef std::uint64_t __hip_uint64_t;

namespace __hip_internal {
using std::array;
using std::conditional;
using std::copysign;
using std::is_same;
using std::numeric_limits;
}  // namespace __hip_internal
