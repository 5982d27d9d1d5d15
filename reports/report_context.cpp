#include "reports/report_context.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "gpu/common/runtime.hpp"
#include "report_build_info.hpp"
#include "sim/common/threads.hpp"
#include "sim/io/build_info.hpp"

namespace exmy::reports {

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
extern "C" void on_interrupt_signal(int) {
  interrupt_flag().store(true);
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(v.begin());
        return v;
      }
    }
  }
  return "unknown";
}

// Output of a shell command (first line, trimmed); "" when it fails.
std::string command_line_output(const std::string& cmd) {
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[512] = {0};
  std::string out;
  if (std::fgets(buf, sizeof buf, p) != nullptr) out = buf;
  const int rc = pclose(p);
  if (rc != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The source tree the binary was built from, read at run time (the configure-time SHA goes
// stale when the tree changes without a reconfigure): "<sha>[-dirty]", with the build's SHA
// appended when they differ.
std::string source_git_sha() {
  const std::string src = EXMY_SOURCE_DIR;
  const std::string head =
      command_line_output("git -C '" + src + "' rev-parse --short=12 HEAD 2>/dev/null");
  std::string built = exmy::build_git_sha();
  if (head.empty()) return built.empty() ? "unknown" : built + " (configure time; no git now)";
  const std::string dirty = command_line_output(
      "git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null | head -c 1");
  std::string s = head + (dirty.empty() ? "" : "-dirty");
  if (!built.empty() && built != "unknown" && built != head) {
    s += " (the build was configured at " + built + ")";
  }
  return s;
}

std::string compiler_description() {
#if defined(__clang__)
  std::string c = "clang " __clang_version__;
#elif defined(__GNUC__)
  std::string c = "g++ " __VERSION__;
#else
  std::string c = "unknown compiler";
#endif
  return c + "; " EXMY_BUILD_FLAGS;
}

std::string os_description() {
  struct utsname u;
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string python_description() {
  const char* env = std::getenv("EXMY_PYTHON");
  const std::string py = (env != nullptr && *env != '\0') ? env : "/usr/bin/python3";
  const std::string v =
      command_line_output("'" + py +
                          "' -c 'import sys; v = sys.version.split()[0]\ntry:\n import matplotlib; "
                          "m = matplotlib.__version__\nexcept Exception:\n m = \"not importable\"\n"
                          "print(\"Python %s, matplotlib %s\" % (v, m))' 2>/dev/null");
  return py + ": " + (v.empty() ? "not runnable" : v);
}
}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_interrupt_signal);
  std::signal(SIGTERM, on_interrupt_signal);
}

void throw_if_interrupted() {
  if (interrupt_flag().load(std::memory_order_relaxed)) throw Interrupted();
}

Provenance collect_provenance() {
  Provenance p;
  p.date = utc_now_iso();
  p.version = EXMY_VERSION;
  p.git_sha = source_git_sha();
  p.compiler = compiler_description();
  p.os = os_description();
  p.cpu_model = read_cpu_model();
  p.cores = usable_cores();
  p.python = python_description();
  const int n = exmy::gpu::device_count();
  p.gpu = n > 0 ? exmy::gpu::device_name() + " (" + std::to_string(n) + " device(s), unused)"
                : exmy::gpu::device_name();
  p.engine = "native (sim/native round_pack, CPU)";
  return p;
}

ReportContext::ReportContext(ReportOptions opts)
    : opts_(std::move(opts)), start_(std::chrono::steady_clock::now()) {
  // --threads, else OMP_NUM_THREADS (its first entry, as OpenMP reads a nested list), else every
  // usable core. The report's own threads do the work; results never depend on their number.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (opts_.threads > 0) {
    threads_ = opts_.threads;
    threads_source_ = "--threads";
  } else if (const std::optional<int> env = env_threads(omp)) {
    // Held to --threads' range (1 to 1024): OMP_NUM_THREADS=100000 is not 100000 threads.
    threads_ = std::min(*env, 1024);
    threads_source_ = "OMP_NUM_THREADS";
  } else {
    threads_ = usable_cores();
    threads_source_ = "usable cores";
  }
  if (threads_ < 1) threads_ = 1;
  prov_ = collect_provenance();
}

void ReportContext::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) const {
  std::atomic<std::size_t> next{0};
  std::exception_ptr first;
  std::mutex mu;
  auto worker = [&]() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        throw_if_interrupted();
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        next.store(n);  // stop handing out work
        return;
      }
    }
  };
  const int t = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads_), n));
  std::vector<std::thread> pool;
  for (int k = 1; k < t; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (first) std::rethrow_exception(first);
  throw_if_interrupted();
}

namespace {
std::string seconds_text(double s) {
  char buf[32];
  if (s < 100) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s) / 60,
                  static_cast<int>(s) % 60);
  }
  return buf;
}
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

CpuTimes cpu_times_now() {
  auto secs = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  CpuTimes t;
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) t.self = secs(u);
  if (getrusage(RUSAGE_CHILDREN, &u) == 0) t.children = secs(u);
  return t;
}

void ReportContext::progress(const std::string& section, const std::string& what) const {
  std::fprintf(stderr, "[%s, run %s] %s\n", section.c_str(), seconds_text(since(start_)).c_str(),
               what.c_str());
  std::fflush(stderr);
}

Progress::Progress(const ReportContext& ctx, std::string section, double total_work)
    : ctx_(ctx),
      section_(std::move(section)),
      total_(total_work),
      start_(std::chrono::steady_clock::now()) {}

void Progress::step(const std::string& what, double work_done_before) {
  const double el = since(start_);
  const double frac = total_ > 0 ? work_done_before / total_ : 0.0;
  std::string eta = "ETA unknown";
  if (frac > 0.02 && el > 0.5) eta = "ETA " + seconds_text(el * (1 - frac) / frac);
  char pct[16];
  std::snprintf(pct, sizeof pct, "%3.0f%%", 100 * frac);
  std::fprintf(stderr, "[%s, run %s] %s %s; elapsed %s, %s\n", section_.c_str(),
               seconds_text(since(ctx_.start_)).c_str(), pct, what.c_str(),
               seconds_text(el).c_str(), eta.c_str());
  std::fflush(stderr);
}

}  // namespace exmy::reports
