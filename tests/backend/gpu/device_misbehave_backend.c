/* Test-only CUDA backends whose device entry point computes every code right (the reference
 * plugin's host code on a copy, the codes copied back to the device) and then breaks one
 * isolation rule on the device (docs/SEMANTICS.md 13.5), chosen by a macro:
 *   EXMY_TEST_DEVICE_ZERO_INPUT   zeroes the device input (a kernel that reuses x as scratch);
 *   EXMY_TEST_DEVICE_PAST_END     writes the byte after the device codes.
 * `exmy verify|fuzz --backend LIB --entry device` must fail them with a message that says so
 * (tests/backend/gpu/test_cvt_plugin.cpp). The host entry point is the reference, correct. */
#include <cuda_runtime.h>
#include <stdlib.h>

#define exmy_backend_cast_f32 exmy_test_reference_cast
#include "../../../examples/backend_reference/reference_backend.c"
#undef exmy_backend_cast_f32

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  return exmy_test_reference_cast(format, rounding, seed, x, codes, n);
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32_device(const char* format, const char* rounding,
                                                     unsigned long long seed, const float* x,
                                                     void* codes, unsigned long long n,
                                                     void* stream) {
  const unsigned long long cb = strcmp(format, "bf16") == 0 || strcmp(format, "fp16") == 0 ? 2 : 1;
  float* hx = (float*)malloc(n * sizeof(float) + 1);
  unsigned char* hc = (unsigned char*)malloc(n * cb + 1);
  int rc = 1;
  (void)stream;
  if (hx != NULL && hc != NULL &&
      cudaMemcpy(hx, x, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess) {
    rc = exmy_test_reference_cast(format, rounding, seed, hx, hc, n);
    if (rc == 0 && cudaMemcpy(codes, hc, n * cb, cudaMemcpyHostToDevice) != cudaSuccess) rc = 1;
  }
#ifdef EXMY_TEST_DEVICE_ZERO_INPUT
  if (rc == 0) cudaMemset((void*)x, 0, n * sizeof(float));
#endif
#ifdef EXMY_TEST_DEVICE_PAST_END
  if (rc == 0) cudaMemset((unsigned char*)codes + n * cb, 0x11, 1);
#endif
  free(hx);
  free(hc);
  return rc;
}
