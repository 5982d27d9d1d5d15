/* Bug zoo: an off-by-one exponent bias: fnuz formats encoded with the OCP bias 2^(X-1) - 1
 * (e4m3fnuz: 7) instead of their own 2^(X-1) (8), so every normal code is one binade off
 * (1.0 comes out as 0x38, the e4m3fn code, instead of 0x40).
 *
 * Why kernels have it: e4m3fn (OCP, NVIDIA) and e4m3fnuz (AMD MI300, Graphcore) share their bit
 * layout and differ in bias and specials; a kernel templated on E and M alone gets one of them
 * wrong.
 *
 * Exposed by: e4m3fnuz rne (every chunk of verify --depth ci; any normal value under fuzz).
 *
 *   exmy verify --backend libexmy_zoo_fnuz_bias.so --op cast --format e4m3fnuz --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_fnuz_bias.so --op cast --format e4m3fnuz --round rne */
#define EXMY_REFERENCE_FNUZ_BIAS 1
#include "../backend_reference/reference_backend.c"
