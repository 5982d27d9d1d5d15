/* Bug zoo: sr:R takes the random bits from the wrong end of the word: the low R bits
 * (`word & ((1 << R) - 1)`) instead of the top R (`word >> (32 - R)`, SEMANTICS 3.2). Both are
 * uniform, so the rounding is still unbiased; the bits differ.
 *
 * Why kernels have it: masking is the natural way to "take R bits", and generators whose low
 * bits are weak (LCGs) taught the top-bits convention that Philox users do not expect.
 *
 * Exposed by: e5m2 sr:16 (and any R < 32).
 *
 *   exmy verify --backend libexmy_zoo_sr_low_bits.so --op cast --format e5m2 --round sr:16 \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_sr_low_bits.so --op cast --format e5m2 --round sr:16 */
#define EXMY_REFERENCE_SR_LOW_BITS 1
#include "../backend_reference/reference_backend.c"
