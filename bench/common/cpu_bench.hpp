// CPU-side reporting shared by the Google Benchmark programs (issue 15): one thread, the machine
// and versions in the context block, and same-run ratios printed after the table (compute them
// from --benchmark_out JSON the same way), so a noisy machine still gives comparable numbers.
//
//   int main(int argc, char** argv) {
//     exmy::bench::CpuRun run(argc, argv);               // pins 1 thread, adds the context
//     run.ratio("fp32->e4m3fn rne / memcpy", "BM_fast_rne/20", "BM_memcpy/20");
//     return run.run();                                   // table, then the ratio lines
//   }
//
// A ratio is items_per_second(numerator) / items_per_second(denominator) (the median aggregate
// when --benchmark_repetitions is given), so > 1 means the numerator is faster.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace exmy::bench {

// "model name" of /proc/cpuinfo (the lscpu model), or "unknown".
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  }
  return "unknown";
}

// Console output as usual; remembers every run's items/s for the ratio lines.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      const auto it = r.counters.find("items_per_second");
      if (it == r.counters.end() || r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[r.run_name.str()] = it->second.value;
      } else {
        single_[r.run_name.str()] = it->second.value;
      }
    }
  }
  // items/s of `name` (a benchmark's full name without the aggregate suffix); < 0 if absent.
  double rate(const std::string& name) const {
    if (const auto m = median_.find(name); m != median_.end()) return m->second;
    if (const auto s = single_.find(name); s != single_.end()) return s->second;
    return -1;
  }

 private:
  std::map<std::string, double> median_, single_;
};

class CpuRun {
 public:
  CpuRun(int& argc, char** argv) : argc_(argc), argv_(argv) {
#ifdef _OPENMP
    omp_set_num_threads(1);  // the CPU rows are one thread
#endif
    benchmark::Initialize(&argc_, argv_);
    benchmark::AddCustomContext("cpu_model", cpu_model());
    benchmark::AddCustomContext("threads", "1");
  }
  void context(const std::string& key, const std::string& value) {
    benchmark::AddCustomContext(key, value);
  }
  // Printed after the run as "label: x.xx" (numerator items/s over denominator items/s);
  // `target` > 0 adds "(target >= T: met|not met)".
  void ratio(std::string label, std::string num, std::string den, double target = 0) {
    ratios_.push_back({std::move(label), std::move(num), std::move(den), target});
  }
  int run() {
    if (benchmark::ReportUnrecognizedArguments(argc_, argv_)) return 1;
    RatioReporter rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    bool any = false;
    for (const auto& r : ratios_) {
      const double a = rep.rate(r.num), b = rep.rate(r.den);
      if (a <= 0 || b <= 0) continue;  // filtered out or skipped
      if (!any) std::printf("\nSame-run ratios (items/s over items/s; > 1 = faster):\n");
      any = true;
      std::printf("  %-52s %8.3f  (%.1f / %.1f M/s)", r.label.c_str(), a / b, a / 1e6, b / 1e6);
      if (r.target > 0)
        std::printf("  target >= %.2g: %s", r.target, a / b >= r.target ? "met" : "not met");
      std::printf("\n");
    }
    benchmark::Shutdown();
    return 0;
  }

 private:
  struct Ratio {
    std::string label, num, den;
    double target;
  };
  int& argc_;
  char** argv_;
  std::vector<Ratio> ratios_;
};

}  // namespace exmy::bench
