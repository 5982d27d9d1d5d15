/* Bug zoo: the overflow edge half an ulp early by one input: overflow is tested as
 * |x| >= max + q/2 (the threshold) where SEMANTICS 2 step 6 overflows only what rounds above max.
 * At the exact threshold the tie rule decides: e4m3fn's 464 lies between 448 (1.110 * 2^8, even)
 * and 480, so rne gives 448; this plugin gives NaN (e4m3fn has no inf).
 *
 * Why kernels have it: the overflow check is done on the input against a precomputed threshold
 * (fast, before rounding) and the comparison is `>=` instead of `>`, which is right only when
 * max's significand is odd (e5m2: 61440 does overflow under rne).
 *
 * Exposed by: e4m3fn rne (464 is in verify's chunk of 448; fuzz's overflow-threshold class).
 * tests/backend/plugins/overflow_bug_backend.c is the wider sibling: all of (448, 464].
 *
 *   exmy verify --backend libexmy_zoo_overflow_tie.so --op cast --format e4m3fn --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_overflow_tie.so --op cast --format e4m3fn --round rne */
#define EXMY_REFERENCE_OVERFLOW_TIE 1
#include "../backend_reference/reference_backend.c"
