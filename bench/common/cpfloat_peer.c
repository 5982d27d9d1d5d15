/* See cpfloat_peer.h. Compiled only when cmake/ExmyCpfloat.cmake finds CPFloat's headers. */
#include "cpfloat_peer.h"

#include <stdlib.h>
#include <string.h>

#include "cpfloat_binary32.h"

void* exmy_cpf_new(int target) {
  optstruct* o = init_optstruct();
  if (o == NULL) return NULL;
  strcpy(o->format, "custom");
  o->explim = CPFLOAT_EXPRANGE_TARG;
  o->subnormal = CPFLOAT_SUBN_USE;
  o->flip = CPFLOAT_SOFTERR_NO;
  o->p = 0;
  o->bitseed = NULL;
  o->randseedf = NULL;
  o->randseed = NULL;
  switch (target) {
    case EXMY_CPF_E4M3_RNE:
    case EXMY_CPF_E4M3_SR:
      o->precision = 4;
      o->emin = -6;
      o->emax = 8;
      o->infinity = CPFLOAT_INF_NO;
      o->saturation = CPFLOAT_SAT_USE;
      o->round = target == EXMY_CPF_E4M3_RNE ? CPFLOAT_RND_NE : CPFLOAT_RND_SP;
      break;
    case EXMY_CPF_BF16_RNE:
      o->precision = 8;
      o->emin = -126;
      o->emax = 127;
      o->infinity = CPFLOAT_INF_USE;
      o->saturation = CPFLOAT_SAT_NO;
      o->round = CPFLOAT_RND_NE;
      break;
    default:
      free_optstruct(o);
      return NULL;
  }
  if (cpfloat_validate_optstructf(o) < 0) {
    free_optstruct(o);
    return NULL;
  }
  return o;
}

void exmy_cpf_free(void* opts) {
  if (opts != NULL) free_optstruct((optstruct*)opts);
}

int exmy_cpf_round(void* opts, float* out, const float* in, size_t n) {
  return cpfloatf(out, in, n, (optstruct*)opts);
}

const char* exmy_cpf_rng(void) {
#ifdef PCG_VARIANTS_H_INCLUDED
  return "pcg32";
#else
  return "rand()";
#endif
}
