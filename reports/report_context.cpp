#include "reports/report_context.hpp"

#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <thread>

#include "gpu/common/runtime.hpp"

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

// `git rev-parse` of the checkout the binary runs in, for builds configured outside git.
std::string runtime_git_sha() {
  std::FILE* p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
  if (p == nullptr) return "";
  char buf[64] = {0};
  std::string out;
  if (std::fgets(buf, sizeof buf, p) != nullptr) out = buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
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
  p.version = EXMY_VERSION;
  p.git_sha = EXMY_GIT_SHA;
  if (p.git_sha.empty() || p.git_sha == "unknown") {
    const std::string rt = runtime_git_sha();
    p.git_sha = rt.empty() ? "unknown" : rt + " (git rev-parse at run time)";
  }
  p.cpu_model = read_cpu_model();
  const int n = exmy::gpu::device_count();
  p.gpu = n > 0 ? exmy::gpu::device_name() + " (" + std::to_string(n) + " device(s), unused)"
                : exmy::gpu::device_name();
  p.engine = "native (sim/native round_pack, CPU)";
  return p;
}

ReportContext::ReportContext(ReportOptions opts) : opts_(std::move(opts)) {
  threads_ =
      opts_.threads > 0 ? opts_.threads : static_cast<int>(std::thread::hardware_concurrency());
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

void ReportContext::progress(const std::string& section, const std::string& what) const {
  std::fprintf(stderr, "[%s] %s\n", section.c_str(), what.c_str());
  std::fflush(stderr);
}

}  // namespace exmy::reports
