// Built instead of the kernels when nvcc is absent: every entry point says so.
#include "gpu/common/runtime.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "gpu/layer/layer.hpp"
#include "gpu/optim/optim_host.hpp"
#include "gpu/sfu/sfu_probe.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {

int device_count() {
  return 0;
}
std::string device_name() {
  return "none (built without CUDA)";
}
int device_capability() {
  return 0;
}

namespace {
[[noreturn]] void no_cuda() {
  throw InputError("--device cuda: this exmy was built without CUDA (configure with nvcc present)");
}
}  // namespace

std::unique_ptr<optim::Stepper> optim_stepper(const optim::Config&, std::span<float>,
                                              optim::State&) {
  no_cuda();
}

std::vector<std::uint32_t> gemm_emulate(const gemm::Operand&, const gemm::Operand&,
                                        const gemm::AccumModel&, gemm::OutFormat, double,
                                        const gemm::RowColScales*) {
  no_cuda();
}
void gemm_emulate_rows(const gemm::Operand&, const gemm::Operand&, const gemm::AccumModel&,
                       gemm::OutFormat, double, const gemm::RowColScales*, const RowSink&) {
  no_cuda();
}
void gemm_emulate_rows(const gemm::Operand&, const DeviceValues*, const gemm::Operand&,
                       const DeviceValues*, const gemm::AccumModel&, gemm::OutFormat, double,
                       const gemm::RowColScales*, const RowSink&) {
  no_cuda();
}
double gemm_emulate_time_ms(const gemm::Operand&, const gemm::Operand&, const gemm::AccumModel&,
                            gemm::OutFormat, int, GemmPath, bool*) {
  no_cuda();
}
struct PreparedGemm::Impl {};
PreparedGemm::PreparedGemm(const gemm::Operand&, const gemm::Operand&, const gemm::AccumModel&,
                           gemm::OutFormat) {
  no_cuda();
}
PreparedGemm::~PreparedGemm() = default;
bool PreparedGemm::run(GemmPath) {
  no_cuda();
}
std::vector<std::uint32_t> PreparedGemm::codes() const {
  no_cuda();
}
std::vector<std::uint32_t> gemm_emulate_device_codes(const gemm::Operand&, const gemm::Operand&,
                                                     const gemm::AccumModel&, gemm::OutFormat,
                                                     GemmPath, bool*) {
  no_cuda();
}
std::vector<float> int8_product(const std::vector<std::int8_t>&, const std::vector<float>&,
                                std::size_t, const std::vector<std::int8_t>&,
                                const std::vector<float>&, std::size_t, std::size_t,
                                native::DequantOrder, int) {
  no_cuda();
}
std::vector<float> mask_round(const std::vector<float>&, int, int, MaskOuter, MaskInner, int) {
  no_cuda();
}

void int8_product_device(const std::int8_t*, const float*, std::size_t, const std::int8_t*,
                         const float*, bool, std::size_t, std::size_t, native::DequantOrder, int,
                         float*) {
  no_cuda();
}
void mask_round_device(const float*, std::size_t, int, int, MaskOuter, MaskInner, int, float*) {
  no_cuda();
}

namespace layer {
exmy::layer::LayerResult run_layer(const exmy::layer::LayerConfig&, const exmy::layer::LayerShape&,
                                   const std::vector<float>&, const std::vector<float>&,
                                   const std::vector<float>&) {
  no_cuda();
}
void run_layer_rows(const exmy::layer::LayerConfig&, const exmy::layer::LayerShape&,
                    const exmy::layer::MatView&, const exmy::layer::MatView&,
                    const exmy::layer::MatView&, const exmy::layer::LayerSinks&) {
  no_cuda();
}
}  // namespace layer

void sfu_measure(sfu::Bundle&) {
  no_cuda();
}
std::vector<SfuCheck> sfu_verify(const sfu::Bundle&, const std::function<void(int, int)>&) {
  no_cuda();
}
std::vector<SfuCheck> sfu_verify_powf(const std::function<void(int, int)>&) {
  no_cuda();
}
std::vector<SfuCheck> sfu_verify_composites(const std::function<void(int, int)>&) {
  no_cuda();
}

}  // namespace exmy::gpu
