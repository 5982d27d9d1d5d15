/* Test-only: the reference plugin, then EXMY_TEST_SKIP_FIRST (isolation_backend.c says what it
 * does). */
#define EXMY_TEST_SKIP_FIRST 1
#include "isolation_backend.c"
