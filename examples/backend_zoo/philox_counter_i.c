/* Bug zoo: sr:R draws the Philox block with counter i instead of i/4 (SEMANTICS 3.2), so element
 * i uses word i mod 4 of block i: element 0 is right, the rest are not (and 3/4 of the stream is
 * wasted).
 *
 * Why kernels have it: a scalar kernel (one element per thread) calls philox(seed, i) directly,
 * as if every element had its own block, while the reference (cuRAND's curand4, PyTorch) hands
 * out four words per counter.
 *
 * Exposed by: e4m3fn sr:8.
 *
 *   exmy verify --backend libexmy_zoo_philox_counter_i.so --op cast --format e4m3fn \
 *     --round sr:8 --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_philox_counter_i.so --op cast --format e4m3fn --round sr:8 */
#define EXMY_REFERENCE_PHILOX_COUNTER_I 1
#include "../backend_reference/reference_backend.c"
