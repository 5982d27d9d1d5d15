// Host-side facts about the CUDA runtime that callers may ask without including CUDA headers.
#pragma once

#include <string>

namespace exmy::gpu {

// Number of usable CUDA devices; 0 when built without CUDA or when no GPU/driver is present.
int device_count();
// Name of device 0, for provenance ("NVIDIA H100 80GB HBM3").
std::string device_name();
// Compute capability of device 0 as major·10 + minor (90 for H100/H200); 0 without a device.
int device_capability();

}  // namespace exmy::gpu
