/* The plugin of docs/tutorials/check-a-kernel.md: "your" fp32 -> e4m3fn cast (round to nearest,
 * ties to even; OCP e4m3fn: bias 7, no infinities, S.1111.111 is NaN, 448 the largest finite,
 * and a value that rounds above 448 is NaN), wrapped in exmy's backend ABI
 * (include/exmy/backend.h). It answers only e4m3fn under rne and refuses every other request.
 * Built with -DMY_BUG_FTZ it flushes subnormal results to zero, the bug the tutorial catches. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exmy/backend.h"

static uint8_t my_cast(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  const uint8_t sign = (uint8_t)((u >> 31) << 7);
  if (isnan(x)) return sign | 0x7F;
  const double a = fabs((double)x);
  if (a >= 464.0) /* 464 is the tie between 448 and 480 (not finite): even is 448 */
    return sign | (a == 464.0 ? 0x7E : 0x7F);
  if (a < 0.015625) {                      /* below 2^-6: subnormal results, steps of 2^-9 */
    const double q = nearbyint(a * 512.0); /* exact product; ties to even */
#ifdef MY_BUG_FTZ
    if (q < 8) return sign;
#endif
    return sign | (uint8_t)q; /* q = 8 is 2^-6, the smallest normal (code 0x08) */
  }
  int e;
  const double m = frexp(a, &e) * 2.0; /* a = m * 2^(e-1), 1 <= m < 2 */
  e -= 1;
  double q = nearbyint(m * 8.0); /* 8..16 */
  if (q == 16.0) {
    q = 8.0;
    e += 1;
  }
  return sign | (uint8_t)(((e + 7) << 3) | ((int)q - 8));
}

unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}

int exmy_backend_cast_f32(const char* format, const char* rounding, unsigned long long seed,
                          const float* x, void* codes, unsigned long long n) {
  (void)seed;
  if (strcmp(format, "e4m3fn") != 0 || strcmp(rounding, "rne") != 0) return 1; /* refused */
  uint8_t* out = (uint8_t*)codes;
  for (unsigned long long i = 0; i < n; ++i) out[i] = my_cast(x[i]);
  return 0;
}
