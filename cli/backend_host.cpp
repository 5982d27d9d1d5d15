// The backend child process (see backend_host.hpp).
#include "cli/backend_host.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#if EXMY_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "cli/cli_util.hpp"
#include "exmy/backend.h"
#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"

namespace exmy::cli {

Rounding parse_backend_rounding(std::string_view text, std::string_view what) {
  const std::size_t plus = text.find('+');
  try {
    Rounding r = parse_rounding(text.substr(0, plus));
    if (plus != std::string_view::npos) r.overflow = parse_overflow(text.substr(plus + 1));
    return r;
  } catch (const InputError& e) {
    throw InputError(std::string(what) + " '" + std::string(text) +
                     "': expected MODE or MODE+POLICY, MODE rne|rna|rtz|rup|rdn|rto|sr:R (R = "
                     "1..32), POLICY none|satfinite|sat");
  }
}

std::string backend_rounding_text(const Rounding& r) {
  static const char* const modes[] = {"rne", "rna", "rtz", "rup", "rdn", "rto", "sr"};
  std::string s = modes[static_cast<int>(r.mode)];
  if (r.mode == RoundMode::sr) s += ":" + std::to_string(r.sr_bits);
  if (r.overflow == Overflow::satfinite) s += "+satfinite";
  if (r.overflow == Overflow::sat) s += "+sat";
  return s;
}

FloatFormat parse_backend_format(std::string_view name) {
  const auto f = parse_float_format(name);
  if (!f || f->total_bits() > 16) {
    throw InputError("--format '" + std::string(name) +
                     "': expected a float format of at most 16 bits (e4m3fn, e5m2, bf16, ...)");
  }
  return *f;
}

namespace {

// Child -> parent after loading: status 0 and an empty message, or 2 and the reason.
struct Hello {
  std::int32_t status;
  char message[480];
};
struct Request {
  std::uint64_t n, seed;
};
struct Reply {
  std::int32_t rc;
  std::int32_t device_error;  // --entry device: a CUDA error after the call (the child then ends)
  char device_error_name[64];
};

// Whole reads and writes over a pipe; false at end of file or on error.
bool read_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t k = read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}
bool write_all(int fd, const void* p, std::size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

std::string describe_status(int st) {
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    const char* name = strsignal(sig);
    return "signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
  return "unknown status";
}

using CastFn = int (*)(const char*, const char*, unsigned long long, const float*, void*,
                       unsigned long long);
using DeviceCastFn = int (*)(const char*, const char*, unsigned long long, const float*, void*,
                             unsigned long long, void*);
using VersionFn = unsigned (*)();

// What the child needs besides the library: the request's strings, the shared buffers and, for
// the device entry point, their sizes.
struct ServeConfig {
  const std::string &library, &format, &rounding;
  float* x;
  std::uint8_t* codes;
  std::size_t capacity, code_bytes;
  bool device;
};

// The child: load, report, serve. Never returns; _exit skips the parent's atexit handlers and
// static destructors, which are not ours to run twice.
[[noreturn]] void serve(const ServeConfig& c, int in, int out) {
  const std::string &library = c.library, &format = c.format, &rounding = c.rounding;
  // Ctrl-C reaches the whole process group: exmy handles it and ends the child by closing the
  // pipe, so the child must not die of it (that would read as a crash).
  signal(SIGINT, SIG_IGN);
  // What a backend prints goes to stderr: exmy's stdout carries its own report (--json).
  dup2(2, 1);
  Hello hello{};
  const auto fail = [&](const std::string& why) {
    hello.status = 2;
    std::snprintf(hello.message, sizeof hello.message, "%s", why.c_str());
    write_all(out, &hello, sizeof hello);
    _exit(0);
  };
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    fail(std::string("cannot load: ") + (e ? e : "?"));
  }
  const auto version = reinterpret_cast<VersionFn>(dlsym(lib, "exmy_backend_abi_version"));
  if (version == nullptr) fail("no entry point exmy_backend_abi_version (include/exmy/backend.h)");
  const unsigned v = version();
  if (v != EXMY_BACKEND_ABI_VERSION) {
    fail("ABI version " + std::to_string(v) + ", this exmy implements ABI version " +
         std::to_string(EXMY_BACKEND_ABI_VERSION) + " (include/exmy/backend.h)");
  }
  const auto cast = reinterpret_cast<CastFn>(dlsym(lib, "exmy_backend_cast_f32"));
  if (cast == nullptr) fail("no entry point exmy_backend_cast_f32 (include/exmy/backend.h)");
  if (!c.device) {
    hello.status = 0;
    if (!write_all(out, &hello, sizeof hello)) _exit(0);
    Request req;
    while (read_all(in, &req, sizeof req)) {
      Reply rep{cast(format.c_str(), rounding.c_str(), req.seed, c.x, c.codes, req.n), 0, {}};
      if (!write_all(out, &rep, sizeof rep)) break;
    }
    _exit(0);
  }
#if EXMY_HAVE_CUDA
  // --entry device: exmy copies to the device, calls the device entry point on the default
  // stream, synchronizes and copies back (include/exmy/backend.h).
  const auto device = reinterpret_cast<DeviceCastFn>(dlsym(lib, "exmy_backend_cast_f32_device"));
  if (device == nullptr) {
    fail("no entry point exmy_backend_cast_f32_device (optional; needed by --entry device)");
  }
  float* dx = nullptr;
  void* dc = nullptr;
  if (cudaMalloc(&dx, c.capacity * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&dc, c.capacity * c.code_bytes) != cudaSuccess) {
    fail("--entry device: cannot allocate device memory (is there a CUDA device?)");
  }
  hello.status = 0;
  if (!write_all(out, &hello, sizeof hello)) _exit(0);
  Request req;
  while (read_all(in, &req, sizeof req)) {
    Reply rep{0, 0, {}};
    cudaError_t e = cudaMemcpy(dx, c.x, req.n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
      rep.rc = device(format.c_str(), rounding.c_str(), req.seed, dx, dc, req.n, nullptr);
      e = cudaStreamSynchronize(nullptr);
    }
    if (e == cudaSuccess && rep.rc == 0) {
      e = cudaMemcpy(c.codes, dc, req.n * c.code_bytes, cudaMemcpyDeviceToHost);
    }
    if (e != cudaSuccess) {
      // A fault in the backend's kernel leaves the context unusable: report it and end, so that
      // the next call gets a fresh process.
      rep.device_error = static_cast<std::int32_t>(e);
      std::snprintf(rep.device_error_name, sizeof rep.device_error_name, "%s", cudaGetErrorName(e));
      write_all(out, &rep, sizeof rep);
      _exit(0);
    }
    if (!write_all(out, &rep, sizeof rep)) break;
  }
  _exit(0);
#else
  fail("--entry device: this exmy build has no CUDA");
#endif
}

}  // namespace

BackendProcess::BackendProcess(std::string library, std::string format, std::string rounding,
                               std::size_t capacity, bool device)
    : device_(device),
      library_(std::move(library)),
      format_(std::move(format)),
      rounding_(std::move(rounding)),
      capacity_(capacity == 0 ? 1 : capacity) {
#if !EXMY_HAVE_CUDA
  if (device_) throw InputError("--entry device: this exmy build has no CUDA");
#endif
  struct stat sb {};
  if (stat(library_.c_str(), &sb) != 0) {
    throw InputError("--backend '" + library_ + "': no such file");
  }
  if (!S_ISREG(sb.st_mode)) {
    throw InputError("--backend '" + library_ +
                     "': not a regular file (expected a shared library)");
  }
  // dlopen searches the library path for a name without a slash; the user named a file.
  if (library_.find('/') == std::string::npos) library_ = "./" + library_;
  code_bytes_ = parse_backend_format(format_).total_bits() <= 8 ? 1 : 2;
  map_bytes_ = capacity_ * (sizeof(float) + code_bytes_);
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw InputError("--backend: cannot map " + std::to_string(map_bytes_) +
                     " bytes of shared memory");
  }
  x_ = static_cast<float*>(map_);
  codes_ = static_cast<std::uint8_t*>(map_) + capacity_ * sizeof(float);
  // A child that dies while we write to it must not kill exmy with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  start();
}

BackendProcess::~BackendProcess() {
  stop();
  if (map_ != nullptr) munmap(map_, map_bytes_);
}

void BackendProcess::start() {
  int down[2], up[2];
  if (pipe(down) != 0) throw InputError("--backend: cannot create a pipe");
  if (pipe(up) != 0) {
    close(down[0]);
    close(down[1]);
    throw InputError("--backend: cannot create a pipe");
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = fork();
  if (pid < 0) throw InputError("--backend: cannot start the backend process");
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    serve(ServeConfig{library_, format_, rounding_, x_, codes_, capacity_, code_bytes_, device_},
          down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  Hello hello{};
  pollfd p{from_child_, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, timeout_s_ * 1000);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    kill(pid_, SIGKILL);
    stop();
    throw InputError("--backend '" + library_ + "': the library did not finish loading within " +
                     std::to_string(timeout_s_) + " s");
  }
  if (!read_all(from_child_, &hello, sizeof hello)) {
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    stop();
    throw InputError("--backend '" + library_ + "': the library crashed while loading (" +
                     describe_status(st) + ")");
  }
  if (hello.status != 0) {
    hello.message[sizeof hello.message - 1] = '\0';
    stop();
    throw InputError("--backend '" + library_ + "': " + hello.message);
  }
}

void BackendProcess::stop() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ > 0) {
    int st = 0;
    waitpid(pid_, &st, 0);  // the child leaves its loop when the pipe closes
  }
  pid_ = -1;
}

BackendCall BackendProcess::call(std::size_t n, std::uint64_t seed) {
  if (n > capacity_) throw std::logic_error("BackendProcess::call: n above capacity");
  if (pid_ < 0) start();
  BackendCall result;
  const Request req{n, seed};
  Reply rep{};
  bool hung = false;
  if (write_all(to_child_, &req, sizeof req)) {
    // Wait for the reply at most timeout_s_ seconds: a backend that never returns is killed and
    // reported like one that crashed.
    pollfd p{from_child_, POLLIN, 0};
    int ready;
    do {
      ready = poll(&p, 1, timeout_s_ * 1000);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      hung = true;
      kill(pid_, SIGKILL);
    } else if (read_all(from_child_, &rep, sizeof rep)) {
      if (rep.device_error != 0) {
        rep.device_error_name[sizeof rep.device_error_name - 1] = '\0';
        int st = 0;
        waitpid(pid_, &st, 0);  // the child ends after a device error
        pid_ = -1;
        stop();
        result.status = BackendCall::Status::crashed;
        result.crash = std::string("CUDA error ") + rep.device_error_name + " (" +
                       std::to_string(rep.device_error) + ") during or after the call";
        return result;
      }
      if (rep.rc != 0) {
        result.status = BackendCall::Status::returned_nonzero;
        result.rc = rep.rc;
      }
      return result;
    }
  }
  // The child ended (or was ended) in the middle of the call: that call crashed it.
  int st = 0;
  waitpid(pid_, &st, 0);
  pid_ = -1;
  stop();
  result.status = BackendCall::Status::crashed;
  result.crash =
      hung ? "no reply within " + std::to_string(timeout_s_) + " s, killed" : describe_status(st);
  return result;
}

}  // namespace exmy::cli
