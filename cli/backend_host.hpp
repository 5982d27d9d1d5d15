// A backend plugin (include/exmy/backend.h) run in a child process, so that a crashing or
// corrupting backend cannot take exmy down: the child dlopens the library, checks its ABI
// version and entry point, and serves cast requests; inputs and codes travel through shared
// memory mapped before the fork, requests and replies through pipes. Used by `exmy fuzz` and
// `exmy verify --backend` (docs/SEMANTICS.md 13.5).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/io/pending_paths.hpp"
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
  // ok: the call returned 0 and touched nothing but its codes. input_written: it changed an
  // element of its input; out_of_bounds: it wrote outside x[0, n) and codes[0, n) (a guard byte
  // before or after a buffer changed). Both are findings like a crash (docs/SEMANTICS.md 13.5).
  enum class Status {
    ok,
    returned_nonzero,
    crashed,
    input_written,
    out_of_bounds
  } status = Status::ok;
  int rc = 0;         // the entry point's return value (returned_nonzero)
  std::string crash;  // what happened ("signal 11 (Segmentation fault)", "wrote to its input: ...")
};

// What a finding of a call is called in summaries: "crash", "returned-nonzero", "input-written",
// "out-of-bounds" ("" for ok).
const char* call_status_name(BackendCall::Status s);

// Isolation (docs/SEMANTICS.md 13.5): the backend sees only its own copies of the inputs. Each
// buffer it is handed (x, codes; on the device their device copies) lies between guard bytes,
// and the pages around each buffer are unmapped for access (PROT_NONE), so a far write crashes
// the child. After every call exmy compares the backend's copy of the inputs with the caller's
// pristine array and the guard bytes with their pattern; the caller's arrays live in exmy's
// private memory, which the child (a fork taken before they were filled) never sees.
// Thrown by BackendProcess's constructor when `interrupted` (a Ctrl-C flag) turned true while the
// library was loading: the child was ended; the command exits 130.
struct BackendInterrupted : std::runtime_error {
  BackendInterrupted() : std::runtime_error("interrupted while the backend loaded") {}
};

// The child runs in a process group of its own, so that everything it starts (a plugin that
// forks) is killed with it: on a timeout, a Ctrl-C, when exmy is done, and by the signal
// cleanup of sim/io/pending_paths.hpp when a signal ends exmy. A child that dies while one of
// its own children still holds the reply pipe is reported by its exit status (a crash), not as
// a timeout. The pipes are close-on-exec.
class BackendProcess {
 public:
  // Starts the child and loads `library` there. InputError (exit 2) when the file is missing or
  // not loadable, an entry point is missing, the ABI version differs, the child dies while
  // loading, or loading takes more than `timeout_s`; BackendInterrupted when `interrupted`
  // (polled while waiting) turns true. `capacity` is the most elements one call may have.
  // `device`: call exmy_backend_cast_f32_device on device copies of the buffers instead (CUDA
  // builds).
  BackendProcess(std::string library, std::string format, std::string rounding,
                 std::size_t capacity, bool device = false, int timeout_s = 600,
                 bool (*interrupted)() = nullptr);
  ~BackendProcess();
  BackendProcess(const BackendProcess&) = delete;
  BackendProcess& operator=(const BackendProcess&) = delete;

  const std::uint8_t* codes() const { return codes_; }  // the outputs of the last call
  std::size_t capacity() const { return capacity_; }
  std::size_t code_bytes() const { return code_bytes_; }  // 1 or 2 per element

  // Runs exmy_backend_cast_f32(format, rounding, seed, x, codes, n) in the child on a copy of
  // inputs[0, n). `prefill` (n * code_bytes() bytes, optional) is written into the codes before
  // the call: callers pass the complement of the expected codes, so an element the backend does
  // not write cannot pass. After a crash the next call starts a fresh child first. A call without
  // a reply within the timeout is killed and counts as a crash; `interrupted` (polled while
  // waiting, e.g. a Ctrl-C flag) ends the child too (status crashed, "interrupted").
  BackendCall call(const float* inputs, std::size_t n, std::uint64_t seed,
                   const std::uint8_t* prefill = nullptr, bool (*interrupted)() = nullptr);
  void set_timeout(int seconds) { timeout_s_ = seconds; }

  // The guard bytes around every buffer, and their pattern.
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr std::uint8_t kGuardByte = 0xA5;

 private:
  void start();
  void stop();
  void kill_group();
  // Waits up to timeout_s_ for the reply pipe to become readable, polling `interrupted` and
  // whether the child died: 1 readable, 0 timed out, -1 interrupted, -2 the child ended (its
  // status in *status, already reaped).
  int wait_readable(bool (*interrupted)(), int* status);
  void arm_guards(std::size_t n);
  std::string check_guards(std::size_t n) const;  // "" or what was written where
  bool device_ = false;
  std::string library_, format_, rounding_;
  std::size_t capacity_ = 0, code_bytes_ = 1, map_bytes_ = 0;
  std::size_t x_region_ = 0, codes_region_ = 0;  // bytes from a buffer's start to its guard page
  void* map_ = nullptr;
  float* x_ = nullptr;
  std::uint8_t* codes_ = nullptr;
  pid_t pid_ = -1, group_ = -1;
  io::PendingChild pending_;  // the child's process group, killed by a signal that ends exmy
  int to_child_ = -1, from_child_ = -1;
  int timeout_s_ = 600;
  bool (*load_interrupted_)() = nullptr;
};

}  // namespace exmy::cli
