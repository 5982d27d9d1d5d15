/* Bug zoo: the plugin writes one element past the end of its output: codes[n] gets the code of
 * element n - 1. Every code in 0 .. n - 1 is right.
 *
 * Why kernels have it: the grid is rounded up to whole blocks and the tail thread clamps its load
 * index (`x[min(i, n - 1)]`) but not its store index; or a vectorised store writes a whole
 * 2/4/16-byte vector for a partial tail.
 *
 * Only a harness with guard bytes after the output (checked after each call) sees it, or one
 * whose output ends at an unmapped page. Exposed by: e4m3fn rne (any n).
 *
 *   exmy verify --backend libexmy_zoo_write_past_end.so --op cast --format e4m3fn --round rne \
 *     --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_write_past_end.so --op cast --format e4m3fn --round rne */
#define EXMY_REFERENCE_WRITE_PAST_END 1
#include "../backend_reference/reference_backend.c"
