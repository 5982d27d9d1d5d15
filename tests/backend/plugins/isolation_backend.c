/* Test-only backends that compute every code right (they are the reference plugin of
 * examples/backend_reference/) and then break the isolation rules of docs/SEMANTICS.md 13.5 in
 * one way each, chosen by a macro:
 *   EXMY_TEST_ZERO_INPUT    zeroes its input after casting (a kernel that reuses x as scratch);
 *   EXMY_TEST_PAST_END      writes codes[n] (one code past its output);
 *   EXMY_TEST_SKIP_FIRST    leaves codes[0] unwritten (an off-by-one start index).
 * Each must fail `exmy verify --backend` and `exmy fuzz` with a message that says what it did
 * (tests/backend/test_backend_cli.cpp). */
#define exmy_backend_cast_f32 exmy_test_reference_cast
#include "../../../examples/backend_reference/reference_backend.c"
#undef exmy_backend_cast_f32

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  const unsigned long long cb = strcmp(format, "bf16") == 0 || strcmp(format, "fp16") == 0 ? 2 : 1;
#ifdef EXMY_TEST_SKIP_FIRST
  unsigned char keep[2];
  memcpy(keep, codes, cb);
#endif
  int rc = exmy_test_reference_cast(format, rounding, seed, x, codes, n);
  if (rc != 0) return rc;
#ifdef EXMY_TEST_ZERO_INPUT
  memset((void*)x, 0, n * sizeof(float));
#endif
#ifdef EXMY_TEST_PAST_END
  memset((unsigned char*)codes + n * cb, 0, cb);
#endif
#ifdef EXMY_TEST_SKIP_FIRST
  memcpy(codes, keep, cb);
#endif
  return 0;
}
