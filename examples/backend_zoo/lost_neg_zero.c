/* Bug zoo: the sign of zero is lost: -0 and negative values that round to zero come out +0.
 *
 * Why kernels have it: the magnitude is computed and the sign ORed in only on the "nonzero" path
 * (`if (mag == 0) return 0;`), or the result is built from a signed integer that cannot hold -0.
 * Harmless in most arithmetic, visible to 1/x, copysign, atan2 and any bitwise comparison.
 *
 * Exposed by: e5m2 rtz (every negative input above -2^-16 truncates to -0; -0 itself too).
 * Formats with -0 only: fnuz formats have none and are right by accident.
 *
 *   exmy verify --backend libexmy_zoo_lost_neg_zero.so --op cast --format e5m2 --round rtz \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_lost_neg_zero.so --op cast --format e5m2 --round rtz */
#define EXMY_REFERENCE_LOST_NEG_ZERO 1
#include "../backend_reference/reference_backend.c"
