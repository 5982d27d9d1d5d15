/* Bug zoo: rne breaks ties toward the odd neighbour instead of the even one.
 *
 * Why kernels have it: the tie correction tests the kept LSB with the wrong polarity
 * (`lsb ? 0 : 1`, or `(q & 1) == 0` where `!= 0` was meant), or round-to-odd code (used for
 * double-rounding-free intermediate steps) is reused where rne was wanted.
 *
 * Exposed by: e5m2 rne. The overflow threshold 61440 = (57344 + 65536) / 2 is a tie whose kept
 * significand 1.11 is odd: rne overflows it to inf, ties-to-odd keeps it at 57344. Every other
 * tie is wrong too (fuzz shrinks to a small one).
 *
 *   exmy verify --backend libexmy_zoo_ties_to_odd.so --op cast --format e5m2 --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_ties_to_odd.so --op cast --format e5m2 --round rne */
#define EXMY_REFERENCE_TIES_TO_ODD 1
#include "../backend_reference/reference_backend.c"
