// The hardware cvt plugin (examples/backend_cvt_cuda) through `exmy verify --backend` and
// `exmy fuzz --backend` (ci depth; the full 2^32 sweep is the README's command), and its device
// entry point against its host entry point. Label gpu: skips (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/cli_run.hpp"

namespace {

// The plugin: $EXMY_PLUGIN_CVT, else the build tree's, else beside this binary (the packed
// device binaries of scripts/pack-device-binaries.sh).
std::string cvt_plugin() {
  if (const char* p = std::getenv("EXMY_PLUGIN_CVT")) return p;
  if (exmy::testing::exists(EXMY_PLUGIN_CVT)) return EXMY_PLUGIN_CVT;
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return EXMY_PLUGIN_CVT;
  std::string dir(self, static_cast<std::size_t>(len));
  return dir.substr(0, dir.rfind('/')) + "/libexmy_backend_cvt_cuda.so";
}
const std::string kCvt = cvt_plugin();

// A test plugin beside the cvt plugin (the packed device binaries) or in the build tree.
std::string beside(const std::string& built, const std::string& name) {
  if (exmy::testing::exists(built)) return built;
  return kCvt.substr(0, kCvt.rfind('/')) + "/" + name;
}

// stdout and stderr of `exmy ARGS`, and its status.
struct Output {
  int status = -1;
  std::string text;
};
Output exmy_output(const std::string& args) {
  static const std::string dir = exmy::testing::make_tmpdir("exmy_backend_gpu_test");
  const std::string path = dir + "/out";
  const std::string cmd = "'" + exmy::testing::cli() + "' " + args + " >'" + path + "' 2>&1";
  const int st = std::system(cmd.c_str());
  Output o;
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.text = exmy::testing::slurp(path);
  return o;
}

int exmy_status(const std::string& args) {
  const std::string cmd = "'" + exmy::testing::cli() + "' " + args + " >/dev/null";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int compute_capability() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return major * 10 + minor;
}

}  // namespace

TEST_CASE("cvt plugin: ci sweep and fuzz agree with exmy", "[gpu][backend]") {
  if (compute_capability() < 89) {
    WARN("device below sm_89: the cvt plugin reports every request unsupported");
    CHECK(exmy_status("fuzz --backend '" + kCvt +
                      "' --op cast --format e4m3fn --round rne+satfinite") == 2);
    return;
  }
  for (const char* f : {"e4m3fn", "e5m2"}) {
    INFO(f);
    const std::string req = std::string(" --op cast --format ") + f + " --round rne+satfinite";
    CHECK(exmy_status("verify --backend '" + kCvt + "'" + req + " --depth ci --quiet") == 0);
    CHECK(exmy_status("fuzz --backend '" + kCvt + "'" + req) == 0);
    // The device entry point, driven by exmy (device copies, default stream).
    CHECK(exmy_status("verify --backend '" + kCvt + "'" + req +
                      " --depth ci --quiet --entry device") == 0);
    CHECK(exmy_status("fuzz --backend '" + kCvt + "'" + req + " --entry device") == 0);
    // Not what the instruction does: refused (exit 2), not mismatched.
    CHECK(exmy_status("fuzz --backend '" + kCvt + "' --op cast --format " + f + " --round rne") ==
          2);
  }
}

TEST_CASE("--entry device: a plugin that writes its device input or past its device codes fails",
          "[gpu][backend]") {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return;
  struct Case {
    std::string lib, says;
  };
  const Case cases[] = {
      {beside(EXMY_PLUGIN_DEVICE_ZERO_INPUT, "libexmy_test_plugin_device_zero_input.so"),
       "wrote to its input: element 0 was 0x"},
      {beside(EXMY_PLUGIN_DEVICE_PAST_END, "libexmy_test_plugin_device_past_end.so"),
       "wrote outside its buffers: codes byte "}};
  for (const Case& c : cases) {
    INFO(c.lib);
    const std::string req = " --op cast --format e4m3fn --round rne";
    // The host entry point is the reference: it passes.
    CHECK(exmy_status("verify --backend '" + c.lib + "'" + req + " --depth ci --quiet") == 0);
    for (const char* threads : {"1", "2"}) {
      const Output v = exmy_output("verify --backend '" + c.lib + "'" + req +
                                   " --depth ci --quiet --entry device --threads " + threads);
      CHECK(v.status == 1);
      CHECK(v.text.find(c.says) != std::string::npos);
      CHECK(v.text.find("(on the device)") != std::string::npos);
    }
    const Output f = exmy_output("fuzz --backend '" + c.lib + "'" + req + " --entry device");
    CHECK(f.status == 1);
    CHECK(f.text.find(c.says) != std::string::npos);
  }
}

TEST_CASE("cvt plugin: the device entry point equals the host entry point", "[gpu][backend]") {
  if (compute_capability() < 89) return;
  void* lib = dlopen(kCvt.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  using Host = int (*)(const char*, const char*, unsigned long long, const float*, void*,
                       unsigned long long);
  using Device = int (*)(const char*, const char*, unsigned long long, const float*, void*,
                         unsigned long long, void*);
  const auto host = reinterpret_cast<Host>(dlsym(lib, "exmy_backend_cast_f32"));
  const auto device = reinterpret_cast<Device>(dlsym(lib, "exmy_backend_cast_f32_device"));
  REQUIRE(host != nullptr);
  REQUIRE(device != nullptr);
  // An odd count (the kernel converts pairs) over the top binades: large normals, inf, NaNs.
  const std::size_t n = (std::size_t{1} << 20) - 1;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = 0x7F400000u + static_cast<std::uint32_t>(i);
    std::memcpy(&x[i], &u, 4);
  }
  for (const char* f : {"e4m3fn", "e5m2"}) {
    INFO(f);
    std::vector<std::uint8_t> from_host(n), from_device(n);
    REQUIRE(host(f, "rne+satfinite", 0, x.data(), from_host.data(), n) == 0);
    float* dx = nullptr;
    std::uint8_t* dc = nullptr;
    REQUIRE(cudaMalloc(&dx, n * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMalloc(&dc, n) == cudaSuccess);
    REQUIRE(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    cudaStream_t stream = nullptr;
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
    REQUIRE(device(f, "rne+satfinite", 0, dx, dc, n, stream) == 0);
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    REQUIRE(cudaMemcpy(from_device.data(), dc, n, cudaMemcpyDeviceToHost) == cudaSuccess);
    cudaStreamDestroy(stream);
    cudaFree(dx);
    cudaFree(dc);
    CHECK(from_host == from_device);
    CHECK(device(f, "rtz", 0, dx, dc, n, nullptr) != 0);
  }
}
