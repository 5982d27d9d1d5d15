/* Test-only: the reference plugin, then EXMY_TEST_PAST_END (isolation_backend.c says what it does).
 */
#define EXMY_TEST_PAST_END 1
#include "isolation_backend.c"
