/* A deliberately wrong exmy backend: the reference plugin of examples/backend_reference/ with
 * one planted bug, "rne" rounding exact ties away from zero instead of to even (the classic
 * fp8 kernel bug: `(bits + half) >> shift` without the tie correction). Every other input and
 * mode is right, so only a tie with an even kept significand exposes it:
 *   exmy fuzz --backend libexmy_backend_wrong_tie.so --op cast --format e4m3fn --round rne
 * exits 1 with a single-value counterexample that is a midpoint of two e4m3fn values
 * (tests/backend/test_backend_cli.cpp). */
#define EXMY_REFERENCE_TIES_AWAY 1
#include "../backend_reference/reference_backend.c"
