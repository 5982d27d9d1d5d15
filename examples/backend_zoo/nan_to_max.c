/* Bug zoo: NaN inputs become the largest finite code (e4m3fn: +-448, 0x7E / 0xFE, instead of
 * the NaN 0x7F / 0xFF).
 *
 * Why kernels have it: the NaN test is missing and NaN falls into the overflow/saturation branch
 * (every comparison with NaN is false, so `fminf(fmaxf(x, -448), 448)` and clamp-then-convert
 * code saturate it), or fminf/fmaxf return the non-NaN operand.
 *
 * Exposed by: e4m3fn rne (verify's chunk of +-inf and the NaNs after it; fuzz's NaN classes).
 *
 *   exmy verify --backend libexmy_zoo_nan_to_max.so --op cast --format e4m3fn --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_nan_to_max.so --op cast --format e4m3fn --round rne */
#define EXMY_REFERENCE_NAN_TO_MAX 1
#include "../backend_reference/reference_backend.c"
