/* Bug zoo: sr:R takes the wrong Philox word of its block: word (i + 1) mod 4 instead of
 * i mod 4 (SEMANTICS 3.2). The words are as random as the right ones, so statistics (unbiasedness,
 * variance) cannot see it; only a bit-exact comparison can.
 *
 * Why kernels have it: a vectorised kernel draws one Philox block per 4 elements and unpacks
 * uint4 {x, y, z, w} into a register array with a rotated index, or with a lane offset.
 *
 * Exposed by: e5m2 sr:8 (any inexact input whose decision differs between the two words).
 *
 *   exmy verify --backend libexmy_zoo_philox_next_word.so --op cast --format e5m2 --round sr:8 \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_philox_next_word.so --op cast --format e5m2 --round sr:8 */
#define EXMY_REFERENCE_PHILOX_NEXT_WORD 1
#include "../backend_reference/reference_backend.c"
