/* Test-only backend that dereferences NULL when it meets a NaN input (and is right otherwise):
 * exmy must report the crash with the input, and survive (tests/backend/test_backend_cli.cpp).
 * With EXMY_TEST_HANG (hang_backend.c) it never returns instead. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>

#include "exmy/backend.h"

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  unsigned long long i;
  (void)seed;
  if (strcmp(format, "e4m3fn") != 0 || strcmp(rounding, "rtz") != 0) return 1;
  for (i = 0; i < n; ++i) {
    unsigned u, mag;
    memcpy(&u, x + i, 4);
    mag = u & 0x7FFFFFFFu;
    if (mag > 0x7F800000u) {
#ifdef EXMY_TEST_HANG
      for (;;) pause(); /* the planted hang */
#else
      *(volatile int*)0 = 1; /* the planted crash */
#endif
    }
    /* e4m3fn under rtz, enough for non-NaN inputs: truncate, saturate at 448. */
    {
      unsigned s = (u >> 24) & 0x80u, c;
      int e = (int)(mag >> 23) - 127;
      if (mag == 0x7F800000u) {
        c = 0x7F; /* inf -> NaN: e4m3fn has no inf (SEMANTICS 4.1) */
      } else if (mag >= 0x43E00000u) {
        c = 0x7E; /* finite >= 448 -> max under rtz (4.2) */
      } else if (e >= -6) {
        c = (unsigned)((e + 7) << 3) | ((mag >> 20) & 7u);
      } else {
        /* subnormal: value / 2^-9, truncated */
        double v = 0;
        float xf;
        memcpy(&xf, &u, 4);
        v = (xf < 0 ? -xf : xf) * 512.0;
        c = (unsigned)v;
      }
      ((unsigned char*)codes)[i] = (unsigned char)(s | c);
    }
  }
  return 0;
}
