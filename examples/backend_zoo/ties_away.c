/* Bug zoo: rne rounds exact ties away from zero, everywhere (like examples/backend_wrong_tie/).
 *
 * Why kernels have it: `(bits + (1 << (shift - 1))) >> shift` is round-half-up on the magnitude
 * (that is rna); rne also needs the sticky/LSB correction `- ((bits >> shift) & 1 ^ 1)` when the
 * dropped bits are exactly half, and it is easy to forget.
 *
 * Exposed by: e4m3fn rne (the tie 1.0625 between 1 and 1.125 is in verify's chunk of 1.0; fuzz
 * shrinks to the smallest tie, 2^-10). On e5m2 rne the ci chunks hold no tie with an even kept
 * significand (the threshold tie 61440 has an odd one), so e4m3fn is the exposing format.
 *
 *   exmy verify --backend libexmy_zoo_ties_away.so --op cast --format e4m3fn --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_ties_away.so --op cast --format e4m3fn --round rne */
#define EXMY_REFERENCE_TIES_AWAY 1
#include "../backend_reference/reference_backend.c"
