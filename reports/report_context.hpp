// Shared state of one `exmy report` run: options, provenance, progress, interruption and the
// deterministic parallel loop every section uses. Results never depend on the thread count:
// work items are independent, write only their own slot, and are reduced in index order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace exmy::reports {

struct ReportOptions {
  std::string out_dir;
  bool quick = false;
  std::uint64_t seed = 20231116;  // default: the date seed 000 was revised; any value works
  int threads = 0;                // 0: OMP_NUM_THREADS if set, else hardware concurrency
  // Internal size knob for tests: 0 = as --quick/full says; 1 = the tiny configuration the unit
  // tests run (seconds). Not exposed on the command line.
  int tiny = 0;
  bool figures = true;  // run the matplotlib scripts (tests switch this off)
};

// Thrown from worker loops once SIGINT/SIGTERM has been seen; nothing is written after it.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

// Set by the signal handler installed by install_interrupt_handler(); checked by loops.
std::atomic<bool>& interrupt_flag();
void install_interrupt_handler();
void throw_if_interrupted();

// Provenance recorded in every index.md (never in CSVs: CSVs are a function of the seed only).
struct Provenance {
  std::string date;  // UTC start of the run, ISO 8601
  std::string version;
  std::string
      git_sha;  // the source tree at run time (with "-dirty"), and the build's if it differs
  std::string compiler;  // compiler name and version, build type and flags
  std::string os;        // uname: system, release, machine
  std::string cpu_model;
  int cores = 0;  // logical CPUs the process may use
  std::string gpu;
  std::string engine;
  std::string python;  // the figure interpreter, its version and matplotlib's
};
Provenance collect_provenance();

class ReportContext {
 public:
  explicit ReportContext(ReportOptions opts);
  const ReportOptions& options() const { return opts_; }
  int threads() const { return threads_; }
  // Where the thread count came from: "--threads", "OMP_NUM_THREADS" or "hardware concurrency".
  const std::string& threads_source() const { return threads_source_; }
  const Provenance& provenance() const { return prov_; }
  // Where section `key` writes: a directory inside the staging directory set by
  // stage_sections_in (the report swaps each finished section into out_dir whole), else
  // out_dir/key.
  std::string section_dir(const std::string& key) const {
    return (stage_.empty() ? opts_.out_dir : stage_) + "/" + key;
  }
  void stage_sections_in(const std::string& dir) { stage_ = dir; }

  // Runs fn(i) for i in [0, n) on threads() threads. Each i must write only its own outputs.
  // Rethrows the first exception (Interrupted included) after all workers stop.
  void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) const;

  // One progress line on stderr with the run's elapsed time ("[variance 12 s] gaussian k=4096").
  void progress(const std::string& section, const std::string& what) const;

 private:
  ReportOptions opts_;
  std::string stage_;
  int threads_;
  std::string threads_source_;
  Provenance prov_;
  std::chrono::steady_clock::time_point start_;
  friend class Progress;
};

// CPU time used so far (user + system, seconds): by this process (every thread) and by its
// waited-for children (the figure scripts). The report records the difference per section, so
// the time on a machine of fewer cores is estimable from a run on a loaded or larger one
// (bench/results/2026-12-02-cpu-main-job-time.md).
struct CpuTimes {
  double self = 0;
  double children = 0;
};
CpuTimes cpu_times_now();

// Progress of one loop with a known amount of work (in any unit proportional to time): each
// step() prints what starts now, the elapsed time of the loop and its ETA from the rate so far.
class Progress {
 public:
  Progress(const ReportContext& ctx, std::string section, double total_work);
  void step(const std::string& what, double work_done_before);

 private:
  const ReportContext& ctx_;
  std::string section_;
  double total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace exmy::reports
