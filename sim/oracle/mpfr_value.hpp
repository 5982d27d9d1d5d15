// A small RAII holder for an MPFR number (C API underneath), so that oracle users and tests never
// leak an mpfr_t on an exception path. Host only.
#pragma once

// <cstdint> before <mpfr.h> enables MPFR's intmax_t functions (mpfr_get_uj, ...).
#include <cstdint>
// clang-format off
#include <mpfr.h>
// clang-format on

namespace exmy::oracle {

class MpfrValue {
 public:
  explicit MpfrValue(mpfr_prec_t prec = 64) { mpfr_init2(v_, prec); }
  ~MpfrValue() { mpfr_clear(v_); }
  MpfrValue(const MpfrValue&) = delete;
  MpfrValue& operator=(const MpfrValue&) = delete;

  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }
  operator mpfr_ptr() { return v_; }
  operator mpfr_srcptr() const { return v_; }

 private:
  mpfr_t v_;
};

}  // namespace exmy::oracle
