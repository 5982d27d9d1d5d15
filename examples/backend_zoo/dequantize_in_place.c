/* Bug zoo: the plugin writes to its input. Its codes are right, but after the call x holds the
 * dequantized values (each element replaced by the value of its code: fake quantization in
 * place), although the ABI passes x as const.
 *
 * Why kernels have it: a fused "quantize and keep the quantized activations" kernel stores the
 * rounded value into the fp32 buffer for the next layer or the backward pass, and the host
 * wrapper passes the caller's buffer instead of a scratch one.
 *
 * Every code this plugin returns is right, so only a harness that checks the input after the
 * call sees it (a pristine copy compared with x): exmy verify --backend's buffer isolation. A
 * harness that computes its reference from x after the call is fooled, since every value of a
 * format rounds to itself (NaN to NaN) in every mode. Exposed by: e4m3fn rne (any input that is
 * not an e4m3fn value).
 *
 *   exmy verify --backend libexmy_zoo_dequantize_in_place.so --op cast --format e4m3fn \
 *     --round rne --depth ci --threads 1 --quiet
 *   exmy fuzz --backend libexmy_zoo_dequantize_in_place.so --op cast --format e4m3fn --round rne */
#define EXMY_REFERENCE_DEQUANTIZE_IN_PLACE 1
#include "../backend_reference/reference_backend.c"
