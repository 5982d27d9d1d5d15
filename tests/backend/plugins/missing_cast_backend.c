/* Test-only backend without the required exmy_backend_cast_f32: exmy must refuse it (exit 2). */
#include "exmy/backend.h"

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}
