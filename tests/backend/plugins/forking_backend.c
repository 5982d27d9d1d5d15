/* Test-only backend for the process-handling tests of issue 36 (tests/backend/
 * test_backend_hostile.cpp). Its behaviour is chosen by EXMY_TEST_PLUGIN_MODE (the backend child
 * inherits exmy's environment):
 *   fork-crash   the cast forks a process that sleeps (holding the reply pipe), then crashes:
 *                exmy must report a crash, not a timeout, and kill the forked process;
 *   load-hang    loading never ends (a constructor that waits forever): --timeout applies while
 *                loading, and Ctrl-C ends it;
 *   hang-forked  the cast forks a process that spins, then waits forever itself: Ctrl-C must end
 *                both.
 * When it reaches its hang, it creates the file EXMY_TEST_PLUGIN_READY (if set), so that the
 * tests signal at a known point instead of after a guessed delay. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exmy/backend.h"

static int mode_is(const char* m) {
  const char* v = getenv("EXMY_TEST_PLUGIN_MODE");
  return v != NULL && strcmp(v, m) == 0;
}

static void ready(void) {
  const char* f = getenv("EXMY_TEST_PLUGIN_READY");
  if (f != NULL) {
    int fd = open(f, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
  }
}

__attribute__((constructor)) static void on_load(void) {
  if (mode_is("load-hang")) {
    ready();
    for (;;) pause();
  }
}

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  (void)format;
  (void)rounding;
  (void)seed;
  (void)x;
  memset(codes, 0, (size_t)n);
  if (mode_is("fork-crash")) {
    if (fork() == 0) {
      for (;;) pause(); /* holds the reply pipe open */
    }
    *(volatile int*)0 = 1; /* the planted crash */
  }
  if (mode_is("hang-forked")) {
    if (fork() == 0) {
      for (;;) {
      } /* spins */
    }
    ready();
    for (;;) pause();
  }
  return 1; /* no mode: supports nothing */
}
