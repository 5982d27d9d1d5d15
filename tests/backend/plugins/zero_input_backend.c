/* Test-only: the reference plugin, then EXMY_TEST_ZERO_INPUT (isolation_backend.c says what it
 * does). */
#define EXMY_TEST_ZERO_INPUT 1
#include "isolation_backend.c"
