/* Test-only backend: the reference plugin with an off-by-one overflow threshold (overflow decided
 * on the input, |x| > max, before rounding; SEMANTICS 2 step 6 decides it after rounding), so
 * e4m3fn inputs in (448, 464] overflow instead of rounding to 448 under rne. `exmy fuzz` must
 * find it in its default number of cases (tests/backend/test_backend_cli.cpp). */
#define EXMY_REFERENCE_OVERFLOW_BEFORE_ROUNDING 1
#include "../../../examples/backend_reference/reference_backend.c"
