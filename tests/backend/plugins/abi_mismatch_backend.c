/* Test-only backend built against a future ABI: exmy must refuse it (exit 2, one line). */
#include "exmy/backend.h"

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION + 1;
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  (void)format, (void)rounding, (void)seed, (void)x, (void)codes, (void)n;
  return 0;
}
