// The backend child process (see backend_host.hpp).
#include "cli/backend_host.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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
  return parse_rounding_text(text, what);
}

std::string backend_rounding_text(const Rounding& r) {
  return rounding_text(r, "+");
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
  // --entry device: what the child found on the device after the call (the host entry's buffers
  // are checked by the parent): the first changed input element (-1: none) and how many, and the
  // first changed guard byte (zone 0: none; 1/2: before/after x; 3/4: before/after codes).
  std::int64_t input_changed, inputs_changed;
  std::int32_t guard_zone;
  std::int64_t guard_offset;
};

enum GuardZone : std::int32_t { kNoZone = 0, kBeforeX, kAfterX, kBeforeCodes, kAfterCodes };

// The first byte of [p, p + n) that is not `v`, or n.
std::size_t first_not(const std::uint8_t* p, std::size_t n, std::uint8_t v) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != v) return i;
  }
  return n;
}

// "wrote to its input: element 5 was 0x3f800000, became 0x00000000 (3 of 16 elements changed)"
std::string input_written_text(std::int64_t first, std::int64_t count, std::uint32_t was,
                               std::uint32_t now, std::size_t n) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "wrote to its input: element %lld was 0x%08x, became 0x%08x (%lld of %zu elements "
                "changed)",
                static_cast<long long>(first), was, now, static_cast<long long>(count), n);
  return buf;
}

// "wrote outside its buffers: codes byte 16 (its codes are bytes 0..15)"; `offset` counts from
// the buffer's start (negative: before it).
std::string guard_text(std::int32_t zone, std::int64_t offset, std::size_t n, std::size_t cb) {
  const bool input = zone == kBeforeX || zone == kAfterX;
  const std::size_t len = n * (input ? sizeof(float) : cb);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "wrote outside its buffers: %s byte %lld (its %s %s bytes 0..%lld)",
                input ? "input" : "codes", static_cast<long long>(offset),
                input ? "input" : "codes", input ? "is" : "are", static_cast<long long>(len) - 1);
  return buf;
}

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
      Reply rep{};
      rep.rc = cast(format.c_str(), rounding.c_str(), req.seed, c.x, c.codes, req.n);
      rep.input_changed = -1;
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
  // Device copies between guard bytes: [G guard][capacity elements][G guard] each.
  constexpr std::size_t G = BackendProcess::kGuardBytes;
  const std::size_t xspan = G + c.capacity * sizeof(float) + G,
                    cspan = G + c.capacity * c.code_bytes + G;
  std::uint8_t *dxb = nullptr, *dcb = nullptr;
  if (cudaMalloc(&dxb, xspan) != cudaSuccess || cudaMalloc(&dcb, cspan) != cudaSuccess) {
    fail("--entry device: cannot allocate device memory (is there a CUDA device?)");
  }
  float* dx = reinterpret_cast<float*>(dxb + G);
  std::uint8_t* dc = dcb + G;
  std::vector<std::uint8_t> back(std::max(xspan, cspan));
  hello.status = 0;
  if (!write_all(out, &hello, sizeof hello)) _exit(0);
  Request req;
  while (read_all(in, &req, sizeof req)) {
    Reply rep{};
    rep.input_changed = -1;
    const std::size_t xb = req.n * sizeof(float), cbn = req.n * c.code_bytes;
    // Guards and the backend's copies: the inputs, and the codes exmy prefilled.
    cudaError_t e = cudaMemset(dxb, BackendProcess::kGuardByte, xspan);
    if (e == cudaSuccess) e = cudaMemset(dcb, BackendProcess::kGuardByte, cspan);
    if (e == cudaSuccess) e = cudaMemcpy(dx, c.x, xb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(dc, c.codes, cbn, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
      rep.rc = device(format.c_str(), rounding.c_str(), req.seed, dx, dc, req.n, nullptr);
      e = cudaStreamSynchronize(nullptr);
    }
    // What the backend did to its input and to the guards (the whole spans come back).
    if (e == cudaSuccess) e = cudaMemcpy(back.data(), dxb, G + xb + G, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) {
      const std::uint8_t* bx = back.data() + G;
      const auto* in_x = reinterpret_cast<const std::uint8_t*>(c.x);
      for (std::size_t i = 0; i < req.n; ++i) {
        if (std::memcmp(bx + 4 * i, in_x + 4 * i, 4) != 0) {
          if (rep.input_changed < 0) rep.input_changed = static_cast<std::int64_t>(i);
          ++rep.inputs_changed;
        }
      }
      const std::size_t before = first_not(back.data(), G, BackendProcess::kGuardByte);
      const std::size_t after = first_not(bx + xb, G, BackendProcess::kGuardByte);
      if (before < G) {
        rep.guard_zone = kBeforeX;
        rep.guard_offset = static_cast<std::int64_t>(before) - static_cast<std::int64_t>(G);
      } else if (after < G) {
        rep.guard_zone = kAfterX;
        rep.guard_offset = static_cast<std::int64_t>(xb + after);
      }
      e = cudaMemcpy(back.data(), dcb, G + cbn + G, cudaMemcpyDeviceToHost);
    }
    if (e == cudaSuccess) {
      const std::uint8_t* bc = back.data() + G;
      if (rep.rc == 0) std::memcpy(c.codes, bc, cbn);
      const std::size_t before = first_not(back.data(), G, BackendProcess::kGuardByte);
      const std::size_t after = first_not(bc + cbn, G, BackendProcess::kGuardByte);
      if (rep.guard_zone == kNoZone && before < G) {
        rep.guard_zone = kBeforeCodes;
        rep.guard_offset = static_cast<std::int64_t>(before) - static_cast<std::int64_t>(G);
      } else if (rep.guard_zone == kNoZone && after < G) {
        rep.guard_zone = kAfterCodes;
        rep.guard_offset = static_cast<std::int64_t>(cbn + after);
      }
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
  _exit(0);  // fail() exits; said again so that serve() visibly never returns ([[noreturn]])
#endif
}

}  // namespace

BackendProcess::BackendProcess(std::string library, std::string format, std::string rounding,
                               std::size_t capacity, bool device, int timeout_s,
                               bool (*interrupted)())
    : device_(device),
      library_(std::move(library)),
      format_(std::move(format)),
      rounding_(std::move(rounding)),
      capacity_(capacity == 0 ? 1 : capacity),
      timeout_s_(timeout_s),
      load_interrupted_(interrupted) {
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
  // [guard page][G guard bytes, x, guard bytes][guard page][G, codes, guard bytes][guard page]:
  // each buffer's span is a whole number of pages, the pages between spans are PROT_NONE.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto span = [&](std::size_t bytes) {
    return (kGuardBytes + bytes + kGuardBytes + page - 1) / page * page;
  };
  const std::size_t xspan = span(capacity_ * sizeof(float)), cspan = span(capacity_ * code_bytes_);
  map_bytes_ = page + xspan + page + cspan + page;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw InputError("--backend: cannot map " + std::to_string(map_bytes_) +
                     " bytes of shared memory");
  }
  auto* base = static_cast<std::uint8_t*>(map_);
  for (std::uint8_t* g : {base, base + page + xspan, base + page + xspan + page + cspan}) {
    if (mprotect(g, page, PROT_NONE) != 0)
      throw InputError("--backend: cannot protect guard pages");
  }
  x_ = reinterpret_cast<float*>(base + page + kGuardBytes);
  codes_ = base + page + xspan + page + kGuardBytes;
  x_region_ = xspan - kGuardBytes;
  codes_region_ = cspan - kGuardBytes;
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
  // Close-on-exec: a plugin that starts a program does not hand it exmy's pipes.
  if (pipe2(down, O_CLOEXEC) != 0) throw InputError("--backend: cannot create a pipe");
  if (pipe2(up, O_CLOEXEC) != 0) {
    close(down[0]);
    close(down[1]);
    throw InputError("--backend: cannot create a pipe");
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InputError("--backend: cannot start the backend process");
  if (pid == 0) {
    // A process group of its own: whatever the plugin starts is killed with it (kill_group).
    setpgid(0, 0);
#if defined(__linux__)
    // The child never outlives exmy, however exmy ends (a second Ctrl-C, a kill): no orphan.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
#else
    (void)parent;
#endif
    close(down[1]);
    close(up[0]);
    serve(ServeConfig{library_, format_, rounding_, x_, codes_, capacity_, code_bytes_, device_},
          down[0], up[1]);
  }
  setpgid(pid, pid);  // also here, so that it holds before the parent relies on it
  close(down[0]);
  close(up[1]);
  pid_ = pid;
  group_ = pid;
  pending_ = io::PendingChild(pid, true);
  to_child_ = down[1];
  from_child_ = up[0];
  Hello hello{};
  int st = 0;
  const int ready = wait_readable(load_interrupted_, &st);
  if (ready == 0 || ready == -1) {
    kill_group();
    stop();
    if (ready == -1) throw BackendInterrupted();
    throw InputError("--backend '" + library_ + "': the library did not finish loading within " +
                     std::to_string(timeout_s_) + " s (--timeout)");
  }
  if (ready == -2 || !read_all(from_child_, &hello, sizeof hello)) {
    if (ready != -2) waitpid(pid_, &st, 0);
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

void BackendProcess::kill_group() {
  if (group_ > 0) kill(-group_, SIGKILL);
}

void BackendProcess::stop() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ > 0) {
    int st = 0;
    waitpid(pid_, &st, 0);  // the child leaves its loop when the pipe closes
  }
  // Whatever the plugin started goes with it (the group outlives its leader while members are
  // left; none may be).
  if (group_ > 0) kill(-group_, SIGKILL);
  group_ = -1;
  pending_.release();
  pid_ = -1;
}

int BackendProcess::wait_readable(bool (*interrupted)(), int* status) {
  pollfd p{from_child_, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return 0;
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
    if (ready > 0) return 1;
    if (interrupted != nullptr && interrupted()) return -1;
    // The child may be dead while a process it started holds the pipe open: no end of file
    // comes, but its status says what happened.
    if (pid_ > 0 && waitpid(pid_, status, WNOHANG) == pid_) {
      pid_ = -1;
      return -2;
    }
  }
}

const char* call_status_name(BackendCall::Status s) {
  switch (s) {
    case BackendCall::Status::ok:
      return "";
    case BackendCall::Status::returned_nonzero:
      return "returned-nonzero";
    case BackendCall::Status::crashed:
      return "crash";
    case BackendCall::Status::input_written:
      return "input-written";
    case BackendCall::Status::out_of_bounds:
      return "out-of-bounds";
  }
  return "?";
}

void BackendProcess::arm_guards(std::size_t n) {
  auto* xb = reinterpret_cast<std::uint8_t*>(x_);
  std::memset(xb - kGuardBytes, kGuardByte, kGuardBytes);
  std::memset(xb + n * sizeof(float), kGuardByte, x_region_ - n * sizeof(float));
  std::memset(codes_ - kGuardBytes, kGuardByte, kGuardBytes);
  std::memset(codes_ + n * code_bytes_, kGuardByte, codes_region_ - n * code_bytes_);
}

std::string BackendProcess::check_guards(std::size_t n) const {
  const auto* xb = reinterpret_cast<const std::uint8_t*>(x_);
  const std::size_t xn = n * sizeof(float), cn = n * code_bytes_;
  const auto before = [](const std::uint8_t* p) {
    const std::size_t k = first_not(p - kGuardBytes, kGuardBytes, kGuardByte);
    return k < kGuardBytes ? static_cast<std::int64_t>(k) - static_cast<std::int64_t>(kGuardBytes)
                           : std::int64_t{0};
  };
  if (const std::int64_t k = before(xb)) return guard_text(kBeforeX, k, n, code_bytes_);
  if (const std::size_t k = first_not(xb + xn, x_region_ - xn, kGuardByte); k < x_region_ - xn) {
    return guard_text(kAfterX, static_cast<std::int64_t>(xn + k), n, code_bytes_);
  }
  if (const std::int64_t k = before(codes_)) return guard_text(kBeforeCodes, k, n, code_bytes_);
  if (const std::size_t k = first_not(codes_ + cn, codes_region_ - cn, kGuardByte);
      k < codes_region_ - cn) {
    return guard_text(kAfterCodes, static_cast<std::int64_t>(cn + k), n, code_bytes_);
  }
  return "";
}

BackendCall BackendProcess::call(const float* inputs, std::size_t n, std::uint64_t seed,
                                 const std::uint8_t* prefill, bool (*interrupted)()) {
  if (n > capacity_) throw std::logic_error("BackendProcess::call: n above capacity");
  if (pid_ < 0) start();
  // The backend's own copies: the inputs, the prefilled codes, guard bytes around both.
  std::memcpy(x_, inputs, n * sizeof(float));
  if (prefill != nullptr) std::memcpy(codes_, prefill, n * code_bytes_);
  arm_guards(n);
  BackendCall result;
  const Request req{n, seed};
  Reply rep{};
  bool hung = false, stopped = false, reaped = false;
  int st = 0;
  if (write_all(to_child_, &req, sizeof req)) {
    // Wait for the reply at most timeout_s_ seconds: a backend that never returns is killed and
    // reported like one that crashed. A signal (Ctrl-C) wakes the poll: `interrupted` decides.
    const int ready = wait_readable(interrupted, &st);
    stopped = ready == -1;
    hung = ready == 0;
    reaped = ready == -2;
    if (stopped || hung) {
      kill_group();
    } else if (!reaped && read_all(from_child_, &rep, sizeof rep)) {
      if (rep.device_error != 0) {
        rep.device_error_name[sizeof rep.device_error_name - 1] = '\0';
        waitpid(pid_, &st, 0);  // the child ends after a device error
        pid_ = -1;
        stop();
        result.status = BackendCall::Status::crashed;
        result.crash = std::string("CUDA error ") + rep.device_error_name + " (" +
                       std::to_string(rep.device_error) + ") during or after the call";
        return result;
      }
      // The inputs and guards: on the device the child looked, on the host exmy looks.
      std::int64_t first = rep.input_changed, count = rep.inputs_changed;
      std::uint32_t was = 0, now = 0;
      if (!device_) {
        first = -1;
        count = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (std::memcmp(&x_[i], &inputs[i], 4) != 0) {
            if (first < 0) first = static_cast<std::int64_t>(i);
            ++count;
          }
        }
      }
      if (first >= 0) {
        std::memcpy(&was, &inputs[first], 4);
        if (!device_) std::memcpy(&now, &x_[first], 4);
        result.status = BackendCall::Status::input_written;
        result.crash = input_written_text(first, count, was, now, n);
        if (device_) result.crash += " (on the device)";
        return result;
      }
      const std::string guard =
          device_ && rep.guard_zone != kNoZone
              ? guard_text(rep.guard_zone, rep.guard_offset, n, code_bytes_) + " (on the device)"
          : device_ ? std::string()
                    : check_guards(n);
      if (!guard.empty()) {
        result.status = BackendCall::Status::out_of_bounds;
        result.crash = guard;
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
  if (!reaped && pid_ > 0) waitpid(pid_, &st, 0);
  pid_ = -1;
  stop();
  result.status = BackendCall::Status::crashed;
  result.crash = stopped ? "interrupted (Ctrl-C), the backend process was ended"
                 : hung  ? "no reply within " + std::to_string(timeout_s_) + " s, killed"
                         : describe_status(st);
  return result;
}

}  // namespace exmy::cli
