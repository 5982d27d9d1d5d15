/* Bug zoo: saturation and NaN swapped: under a saturating policy a finite overflow (and +-inf
 * under satfinite) becomes NaN, and NaN inputs become +-max.
 *
 * Why kernels have it: the two special outputs of an fn format are neighbouring codes (e4m3fn
 * 0x7E = 448, 0x7F = NaN) and the select `is_nan ? max : nan` gets its operands crossed, or the
 * `satfinite` flag of a cvt is wired to the NaN path.
 *
 * Exposed by: e4m3fn rne+satfinite (verify's chunk after 448 and its NaN chunks; fuzz's
 * overflow and NaN classes). Without a policy nothing changes.
 *
 *   exmy verify --backend libexmy_zoo_sat_nan_swapped.so --op cast --format e4m3fn \
 *     --round rne+satfinite --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_sat_nan_swapped.so --op cast --format e4m3fn \
 *     --round rne+satfinite */
#define EXMY_REFERENCE_SAT_NAN_SWAPPED 1
#include "../backend_reference/reference_backend.c"
