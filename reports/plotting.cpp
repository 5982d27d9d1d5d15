#include "reports/plotting.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "reports/output_files.hpp"

extern char** environ;

namespace exmy::reports {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}
}  // namespace

FigureResult run_plot_script(const ReportContext& ctx, const std::string& script,
                             const std::string& section_dir) {
  if (!ctx.options().figures) return {false, "figures not requested (internal test mode)"};
  const std::string python = env_or("EXMY_PYTHON", "/usr/bin/python3");
  const std::string dir = env_or("EXMY_PLOT_DIR", EXMY_REPORT_PLOT_DIR);
  const std::string path = dir + "/" + script;
  if (access(python.c_str(), X_OK) != 0) {
    return {false, "figures skipped: no Python interpreter at " + python + " (set EXMY_PYTHON)"};
  }
  if (!std::filesystem::exists(path)) {
    return {false, "figures skipped: plot script " + path + " not found (set EXMY_PLOT_DIR)"};
  }
  std::vector<std::string> args{python, path, section_dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    return {false, "figures skipped: cannot start " + python};
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  throw_if_interrupted();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {true, ""};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    return {false, "figures skipped: matplotlib is not importable by " + python};
  }
  return {false, "figures skipped: " + script + " failed (status " + std::to_string(status) + ")"};
}

std::string figure_md(const FigureResult& fr, const std::string& stem, const std::string& caption) {
  if (!fr.ok) return "*(" + caption + ": " + fr.note + "; the data are in the CSVs.)*\n\n";
  return "![" + caption + "](" + stem + ".png)\n\n*" + caption + "* ([SVG](" + stem + ".svg))\n\n";
}

std::string provenance_md(const ReportContext& ctx, double seconds) {
  const auto& p = ctx.provenance();
  const auto& o = ctx.options();
  std::string s = "## Provenance\n\n";
  s += "| | |\n|---|---|\n";
  s += "| date (UTC, start) | " + p.date + " |\n";
  s += "| exmy version | " + p.version + " |\n";
  s += "| git | " + p.git_sha + " |\n";
  s += "| compiler, build | " + p.compiler + " |\n";
  s += "| OS | " + p.os + " |\n";
  s += "| CPU | " + p.cpu_model + ", " + std::to_string(p.cores) + " usable logical CPUs |\n";
  s += "| threads | " + std::to_string(ctx.threads()) + " (from " + ctx.threads_source() +
       "; results do not depend on it: per-item work, reduced in index order) |\n";
  s += "| GPU | " + p.gpu + " |\n";
  s += "| figures | " + p.python + " |\n";
  s += "| seed | " + std::to_string(o.seed) +
       " (every random word derives from it: Philox4x32-10 keyed by the seed, a stream per "
       "quantity; SEMANTICS 14) |\n";
  s += "| size | " + std::string(o.tiny ? "tiny (test)" : o.quick ? "--quick" : "full") + " |\n";
  s += "| engine | " + p.engine + " |\n";
  s += "| run time | " + fmt_g(seconds, 3) + " s |\n\n";
  return s;
}

}  // namespace exmy::reports
