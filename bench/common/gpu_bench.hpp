// GPU-side timing shared by the Google Benchmark programs (bench/*.cu; issue 15: one harness
// instead of a copied event loop per file). A benchmark body calls
//
//   exmy::bench::time_cuda(state, reps, [&](long call) { launch(...); });
//
// which makes one warm-up call, then per iteration records a CUDA event, makes `reps`
// back-to-back calls on the legacy default stream, records a second event and reports the
// elapsed time per call as the iteration's manual time (register with UseManualTime()). `call`
// counts from 1 (the warm-up) upward, for bodies that need a fresh step number per call (the
// optimizers' bias corrections). CUDA errors end the process with the call that failed: a
// benchmark cannot report a time for work that did not run.
//
// add_gpu_context() puts the device, driver and runtime versions in the JSON context block so
// that a result file carries its own provenance (bench/results/ cites it).
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace exmy::bench {

inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class Fn>
void time_cuda(benchmark::State& state, int reps, Fn fn) {
  cudaEvent_t a, b;
  cuda_ok(cudaEventCreate(&a), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&b), "cudaEventCreate");
  long call = 1;
  fn(call++);  // warm-up: first-touch allocations, lazy module loading, table uploads
  cuda_ok(cudaDeviceSynchronize(), "warm-up");
  for (auto _ : state) {
    cuda_ok(cudaEventRecord(a), "cudaEventRecord");
    for (int r = 0; r < reps; ++r) fn(call++);
    cuda_ok(cudaEventRecord(b), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(b), "benchmark body");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    state.SetIterationTime(ms / 1e3 / reps);
  }
  cuda_ok(cudaGetLastError(), "benchmark kernels");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

// Device name, SM count, driver and runtime versions of device 0, as context entries.
inline void add_gpu_context() {
  int dev = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDevice(&dev), "cudaGetDevice");
  cuda_ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  cuda_ok(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  cuda_ok(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  const auto ver = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  benchmark::AddCustomContext("gpu", prop.name);
  benchmark::AddCustomContext("gpu_sms", std::to_string(prop.multiProcessorCount));
  benchmark::AddCustomContext("cuda_driver_api", ver(driver));
  benchmark::AddCustomContext("cuda_runtime", ver(runtime));
}

}  // namespace exmy::bench
