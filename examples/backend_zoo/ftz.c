/* Bug zoo: subnormal results are flushed to (signed) zero (FTZ).
 *
 * Why kernels have it: hardware and fast-math modes flush denormals (CUDA -ftz=true, x86 FTZ in
 * MXCSR), and a hand-written converter may simply return zero when the exponent underflows
 * instead of shifting the significand into the subnormal range.
 *
 * Exposed by: e5m2 rne (2^-16 .. 2^-14 are subnormal in e5m2; verify's chunk of the smallest
 * subnormal, fuzz's value and midpoint classes).
 *
 *   exmy verify --backend libexmy_zoo_ftz.so --op cast --format e5m2 --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_ftz.so --op cast --format e5m2 --round rne */
#define EXMY_REFERENCE_FTZ 1
#include "../backend_reference/reference_backend.c"
