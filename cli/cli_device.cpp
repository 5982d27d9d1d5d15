// `--device` parsing and the GPU input type of an array (cli/cli_device.hpp).
#include "cli/cli_device.hpp"

#include "gpu/common/runtime.hpp"
#include "sim/common/error.hpp"

namespace exmy::cli {

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu;
  if (text != "cuda") {
    throw InputError("--device '" + std::string(text) + "': expected cpu or cuda");
  }
#if !EXMY_HAVE_CUDA
  throw InputError("--device cuda: this exmy was built without CUDA (configure with nvcc present)");
#else
  if (gpu::device_count() == 0) {
    throw InputError("--device cuda: no CUDA device is visible (driver missing or no GPU)");
  }
  return Device::cuda;
#endif
}

gpu::CastInput input_type(const io::NpyArray& a, const std::string& path, bool bf16) {
  if (bf16) {
    if (a.descr != io::kDescrU16) {
      throw InputError(path + ": dtype '" + a.descr + "', expected '<u2' (bf16 bit patterns)");
    }
    return gpu::CastInput::bf16;
  }
  if (a.descr == io::kDescrF32) return gpu::CastInput::fp32;
  if (a.descr == io::kDescrF16) return gpu::CastInput::fp16;
  throw InputError(path + ": dtype '" + a.descr +
                   "', expected '<f4' or '<f2' (or '<u2' with --in-format bf16)");
}

}  // namespace exmy::cli
