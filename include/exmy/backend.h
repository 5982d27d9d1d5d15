/* exmy backend ABI: what a shared library implements so that `exmy fuzz --backend LIB.so` and
 * `exmy verify --backend LIB.so` can check it against exmy's reference (docs/SEMANTICS.md 13.5).
 *
 * C89 (save `unsigned long long`, which C99 and C++11 have and C89 compilers accept as an
 * extension), no exmy headers, no C++ types: any compiler (C, C++, CUDA, Fortran through
 * ISO_C_BINDING) can implement it. A backend exports exmy_backend_abi_version and
 * exmy_backend_cast_f32; every other entry point is optional.
 *
 * Versioning. EXMY_BACKEND_ABI_VERSION is an integer; a library returns, from
 * exmy_backend_abi_version(), the value it was compiled with, and exmy refuses a library whose
 * version is not its own (exit status 2, one line). Within one version the ABI only grows: a
 * new entry point is a new optional symbol, looked up by name (dlsym) and treated as
 * "unsupported" when absent; no signature or documented meaning of an existing symbol ever
 * changes. Changing or removing one is a new version.
 *
 * Conventions for every entry point:
 * - Return 0 on success, nonzero when the request (format, rounding, scheme, ...) is not
 *   supported or fails. exmy first calls with the single input 1.0f: nonzero there means
 *   "unsupported" (exit status 2, nothing checked); nonzero on a later call is a failure of
 *   that call (exit status 1, reported with its inputs).
 * - Strings are exmy's own names, NUL-terminated ASCII:
 *   format: a float format of at most 16 bits as `exmy table` names it (SEMANTICS 1:
 *     "e4m3fn", "e5m2", "bf16", "e3m2fn", "e5m2fnuz", "e4m3b11fnuz", any e<X>m<Y>[fn|fnuz|fnu]);
 *   rounding: MODE or MODE+POLICY, MODE one of "rne" "rna" "rtz" "rup" "rdn" "rto" "sr:R"
 *     (R = 1..32; SEMANTICS 2 and 3), POLICY one of "none" (the default) "satfinite" "sat"
 *     (SEMANTICS 4.2): "rne", "sr:8", "rne+satfinite".
 * - Element index: the position of an element in the arrays of one call, 0 .. n-1.
 * - Stochastic rounding (sr:R) draws the word of element i from Philox4x32-10 with
 *   key = (lo32(seed), hi32(seed)) and counter = (lo32(i/4), hi32(i/4), 0, 0) (stream 0),
 *   takes word i mod 4 of the block and uses its top R bits (SEMANTICS 3.2). So element i of a
 *   call is rounded exactly as exmy rounds element i of an array cast with the same seed.
 * - Codes are written one byte per element for formats of at most 8 bits and two bytes,
 *   little-endian, for 9..16 bits (the layout of `exmy cast --in/--out`).
 * - Inputs are IEEE binary32 bit patterns; every pattern (NaN payloads, subnormals, -0) is a
 *   valid input and must not be flushed (SEMANTICS 4.1 says what each becomes).
 * - A call must not keep pointers after it returns, and may be made from any thread of the
 *   process that loaded the library, one call at a time (exmy never calls concurrently).
 *
 * Host and device pointers. The *_f32 entry points take host pointers: a CUDA backend copies to
 * and from the device itself. A CUDA backend may also export the *_device variants, which take
 * device pointers (from cudaMalloc, in the calling thread's current context) and a stream
 * (cudaStream_t passed as void *, NULL for the legacy default stream); the work is enqueued on
 * that stream and may still be running when the call returns, so the caller synchronizes the
 * stream before reading codes. Both variants have the same semantics bit for bit.
 * `exmy fuzz|verify --backend LIB --entry device` checks the device variant.
 */
/* clang-format off: the signatures keep the C spelling of the issue and of C headers. */
#ifndef EXMY_BACKEND_H
#define EXMY_BACKEND_H

#define EXMY_BACKEND_ABI_VERSION 1u

#if defined(_WIN32)
#define EXMY_BACKEND_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define EXMY_BACKEND_EXPORT __attribute__((visibility("default")))
#else
#define EXMY_BACKEND_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- required -------------------------------------------------------------------------- */

/* The ABI version the library was compiled against: return EXMY_BACKEND_ABI_VERSION. */
EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void);

/* Returns 0 on success, nonzero if the request is unsupported. codes: one byte per element for
   formats of at most 8 bits, two (little-endian) for 9..16 bits. rounding is an exmy mode
   string ("rne", "rtz", "sr:8", ...); stochastic modes use exmy's Philox words (seed, stream 0,
   element index), so results are comparable. */
EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n);

/* ---- optional (ABI 1) -------------------------------------------------------------------- */

/* exmy_backend_cast_f32 on device pointers x and codes, enqueued on `stream` (see above). */
EXMY_BACKEND_EXPORT int exmy_backend_cast_f32_device(const char* format, const char* rounding,
                                                     unsigned long long seed, const float* x,
                                                     void* codes, unsigned long long n,
                                                     void* stream);

/* Tensor quantization of a row-major rows x cols fp32 matrix, as
     exmy quantize --scheme SCHEME --to TO OPTIONS --in x.npy --out codes.npy --state-out s.npy
   (SEMANTICS 7): scheme and to as the CLI spells them ("rowwise", "block:256", "mx"; "int8",
   "e4m3fn", "dynamic"), options the remaining CLI options, space separated ("" for none;
   "--scale-mode rceil --variant torchao"). codes receives the bytes of codes.npy's data and
   state the bytes of s.npy's data (state_bytes is the room the caller gives it). Stochastic
   element casts use stream 16 and codebook lookups stream 17 (SEMANTICS 3.2). exmy 0.1 does not
   call this entry point yet; it is reserved so that backends can be written against it. */
EXMY_BACKEND_EXPORT int exmy_backend_quantize_f32(const char* scheme, const char* to,
                                                  const char* options, unsigned long long seed,
                                                  const float* x, unsigned long long rows,
                                                  unsigned long long cols, void* codes, void* state,
                                                  unsigned long long state_bytes);

/* One named array of an optimizer step, in the dtype `exmy step` writes for it ("f32", "bf16",
   "u8", ...), updated in place. */
typedef struct exmy_backend_array {
  const char* name; /* "params", "grads", and the state arrays of SEMANTICS 9 ("exp_avg", ...) */
  const char* dtype;
  void* data;
  unsigned long long n; /* elements */
} exmy_backend_array;

/* `steps` optimizer steps, as `exmy step --optimizer OPTIMIZER OPTIONS` (SEMANTICS 9): options
   the hyperparameter options of the CLI, space separated ("--lr 1e-3 --weight-decay 0.01").
   Reserved like exmy_backend_quantize_f32: exmy 0.1 does not call it yet. */
EXMY_BACKEND_EXPORT int exmy_backend_step(const char* optimizer, const char* options,
                                          unsigned long long steps, exmy_backend_array* arrays,
                                          unsigned long long n_arrays);

/* c (m x n, fp32, row-major) = a (m x k codes of a_format) times b (k x n codes of b_format)
   under the accumulation model `model` (SEMANTICS 8). Reserved: exmy defines no GEMM model yet,
   so no model name is valid in ABI 1 and a backend should return nonzero. */
EXMY_BACKEND_EXPORT int exmy_backend_gemm(const char* model, const char* a_format,
                                          const char* b_format, unsigned long long m,
                                          unsigned long long n, unsigned long long k, const void* a,
                                          const void* b, float* c);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* clang-format on */
#endif /* EXMY_BACKEND_H */
