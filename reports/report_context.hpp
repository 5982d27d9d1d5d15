// Shared state of one `exmy report` run: options, provenance, progress, interruption and the
// deterministic parallel loop every section uses. Results never depend on the thread count:
// work items are independent, write only their own slot, and are reduced in index order.
#pragma once

#include <atomic>
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
  int threads = 0;                // 0: hardware concurrency
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
  std::string version;
  std::string git_sha;
  std::string cpu_model;
  std::string gpu;
  std::string engine;
};
Provenance collect_provenance();

class ReportContext {
 public:
  explicit ReportContext(ReportOptions opts);
  const ReportOptions& options() const { return opts_; }
  int threads() const { return threads_; }
  const Provenance& provenance() const { return prov_; }

  // Runs fn(i) for i in [0, n) on threads() threads. Each i must write only its own outputs.
  // Rethrows the first exception (Interrupted included) after all workers stop.
  void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) const;

  // One progress line on stderr ("[variance] gaussian k=4096 (5/48)").
  void progress(const std::string& section, const std::string& what) const;

 private:
  ReportOptions opts_;
  int threads_;
  Provenance prov_;
};

}  // namespace exmy::reports
