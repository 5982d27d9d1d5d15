/* Bug zoo: rne is right in the normal range, but a tie whose result is subnormal in the target
 * format rounds away from zero (e5m2: 2^-17, half the smallest subnormal, gives 2^-16, not +0;
 * 2.5 * 2^-16 gives 3 * 2^-16, not 2 * 2^-16).
 *
 * Why kernels have it: the subnormal path is a separate branch (a shift by emin - exp plus the
 * implicit bit), often written as "shift right with rounding" without the tie-to-even fix that the
 * main path has; tests built from normal values never reach it.
 *
 * Exposed by: e5m2 rne. Only ties below 2^-14 are wrong: fuzz's midpoint class reaches them;
 * verify --depth ci before its tie generator (every tie of every binade, subnormals included) did
 * not, since its chunks around the smallest subnormal and normal hold no subnormal tie.
 *
 *   exmy fuzz --backend libexmy_zoo_subnormal_ties_away.so --op cast --format e5m2 --round rne
 *   exmy verify --backend libexmy_zoo_subnormal_ties_away.so --op cast --format e5m2 --round rne \
 *     --depth ci --threads 1 --quiet */
#define EXMY_REFERENCE_SUBNORMAL_TIES_AWAY 1
#include "../backend_reference/reference_backend.c"
