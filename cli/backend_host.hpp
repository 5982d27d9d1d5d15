// A backend plugin (include/exmy/backend.h) run in a child process, so that a crashing or
// corrupting backend cannot take exmy down: the child dlopens the library, checks its ABI
// version and entry point, and serves cast requests; inputs and codes travel through shared
// memory mapped before the fork, requests and replies through pipes. Used by `exmy fuzz` and
// `exmy verify --backend` (docs/SEMANTICS.md 13.5).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::cli {

// The ABI's rounding string: MODE or MODE+POLICY ("rne", "sr:8", "rne+satfinite").
Rounding parse_backend_rounding(std::string_view text, std::string_view what = "--round");
// The canonical ABI string of r ("+none" omitted).
std::string backend_rounding_text(const Rounding& r);

// The target of a backend cast: a float format of at most 16 bits (InputError otherwise).
FloatFormat parse_backend_format(std::string_view name);

struct BackendCall {
  enum class Status { ok, returned_nonzero, crashed } status = Status::ok;
  int rc = 0;         // the entry point's return value (returned_nonzero)
  std::string crash;  // how the child ended ("signal 11 (Segmentation fault)", ...)
};

class BackendProcess {
 public:
  // Starts the child and loads `library` there. InputError (exit 2) when the file is missing or
  // not loadable, an entry point is missing, the ABI version differs, or the child dies while
  // loading. `capacity` is the most elements one call may have. `device`: call
  // exmy_backend_cast_f32_device on device copies of the buffers instead (CUDA builds).
  BackendProcess(std::string library, std::string format, std::string rounding,
                 std::size_t capacity, bool device = false);
  ~BackendProcess();
  BackendProcess(const BackendProcess&) = delete;
  BackendProcess& operator=(const BackendProcess&) = delete;

  float* x() { return x_; }                             // inputs of the next call (shared memory)
  const std::uint8_t* codes() const { return codes_; }  // its outputs
  std::size_t capacity() const { return capacity_; }
  std::size_t code_bytes() const { return code_bytes_; }  // 1 or 2 per element

  // Runs exmy_backend_cast_f32(format, rounding, seed, x(), codes(), n) in the child. After a
  // crash the next call starts a fresh child first. A call without a reply within the timeout
  // is killed and counts as a crash.
  BackendCall call(std::size_t n, std::uint64_t seed);
  void set_timeout(int seconds) { timeout_s_ = seconds; }

 private:
  void start();
  void stop();
  bool device_ = false;
  std::string library_, format_, rounding_;
  std::size_t capacity_ = 0, code_bytes_ = 1, map_bytes_ = 0;
  void* map_ = nullptr;
  float* x_ = nullptr;
  std::uint8_t* codes_ = nullptr;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  int timeout_s_ = 600;
};

}  // namespace exmy::cli
