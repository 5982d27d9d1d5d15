/* Test-only backend that never returns when it meets a NaN input (the crash plugin with a hang
 * in place of the crash): exmy must kill it after --timeout and report the input. */
#define EXMY_TEST_HANG 1
#include "crash_backend.c"
