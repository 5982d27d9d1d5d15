/* Bug zoo: fp32 subnormal inputs are read as zero (DAZ, denormals-are-zero).
 *
 * Why kernels have it: the input is loaded through an FTZ/DAZ floating-point path (CUDA's
 * -ftz=true turns fp32 subnormal operands into zero; x86 DAZ in MXCSR), or the decoder treats
 * exponent field 0 as "zero" without looking at the mantissa.
 *
 * Exposed by: bf16 rne: bf16 has fp32's exponent range, so fp32 subnormals are bf16 subnormals
 * (0x1p-130 is bf16 0x0010). Into an 8-bit format under rne they round to +-0 anyway, and DAZ is
 * invisible there; e4m3fn rup would expose it too (a positive subnormal rounds up to 2^-9).
 *
 *   exmy verify --backend libexmy_zoo_daz.so --op cast --format bf16 --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_daz.so --op cast --format bf16 --round rne */
#define EXMY_REFERENCE_DAZ 1
#include "../backend_reference/reference_backend.c"
