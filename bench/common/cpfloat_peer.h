/* A thin C wrapper over CPFloat (Fasi & Mikaitis), the optional peer of the CPU benchmarks
 * (cmake/ExmyCpfloat.cmake; CPFloat itself is fetched by scripts/fetch-cpfloat.sh, not vendored).
 * Each call rounds n binary32 values to the target and stores binary32 results, one thread.
 * Targets:
 *   EXMY_CPF_E4M3_RNE  precision 4, emin -6, emax 8, subnormals, round-to-nearest-even,
 *                      saturation (CPFloat's E4M3 keeps the top binade: max 480, not e4m3fn's 448)
 *   EXMY_CPF_E4M3_SR   the same with stochastic rounding, proportional probabilities (mode 5):
 *                      one pcg32 draw per element when built with PCG, rand() otherwise
 *   EXMY_CPF_BF16_RNE  precision 8, emin -126, emax 127, subnormals, infinities, rne */
#ifndef EXMY_BENCH_CPFLOAT_PEER_H
#define EXMY_BENCH_CPFLOAT_PEER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum exmy_cpf_target { EXMY_CPF_E4M3_RNE = 0, EXMY_CPF_E4M3_SR = 1, EXMY_CPF_BF16_RNE = 2 };

/* A CPFloat option structure for `target` (NULL on failure); free with exmy_cpf_free. */
void* exmy_cpf_new(int target);
void exmy_cpf_free(void* opts);
/* out[i] = CPFloat's rounding of in[i]; returns CPFloat's status (0 = success). */
int exmy_cpf_round(void* opts, float* out, const float* in, size_t n);
/* "pcg32" or "rand()": the generator CPFloat's stochastic rounding draws from. */
const char* exmy_cpf_rng(void);

#ifdef __cplusplus
}
#endif

#endif
