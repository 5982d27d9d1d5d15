#include "reports/plotting.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "reports/output_files.hpp"

extern char** environ;

namespace exmy::reports {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

// The result of a script's exit status, as the synchronous path reports it.
FigureResult figure_status(int status, const std::string& script, const std::string& python) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {true, ""};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    return {false, "figures skipped: matplotlib is not importable by " + python};
  }
  return {false, "figures skipped: " + script + " failed (status " + std::to_string(status) + ")"};
}

// CPU seconds (user + system) of a reaped child.
double cpu_of(const rusage& ru) {
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Deferred scripts and the figure markdown written for them (figure_md), by pending id.
struct Deferred {
  long id;
  pid_t pid;
  std::string script, python, section_dir;
  bool reaped = false;  // figures_finished waited for it already: status and cpu hold
  int status = 0;
  double cpu = 0;
};
struct DeferredMd {
  long id;
  std::string ok_md, stem, caption;
};
std::mutex g_mu;
bool g_defer = false;
long g_next = 0;
std::vector<Deferred> g_running;
std::vector<DeferredMd> g_md;
}  // namespace

void defer_figures(bool on) {
  const std::lock_guard<std::mutex> lock(g_mu);
  g_defer = on;
}

bool figures_finished(const std::string& section_dir) {
  const std::lock_guard<std::mutex> lock(g_mu);
  bool all = true;
  for (Deferred& d : g_running) {
    if (d.section_dir != section_dir || d.reaped) continue;
    rusage ru{};
    pid_t r = 0;
    while ((r = wait4(d.pid, &d.status, WNOHANG, &ru)) < 0 && errno == EINTR) {
    }
    if (r == d.pid) {
      d.reaped = true;
      d.cpu = cpu_of(ru);
    } else {
      all = false;
    }
  }
  return all;
}

FinishedFigures finish_figures(const std::string& section_dir) {
  std::vector<Deferred> mine;
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_running.begin(); it != g_running.end();) {
      if (it->section_dir == section_dir) {
        mine.push_back(*it);
        it = g_running.erase(it);
      } else {
        ++it;
      }
    }
  }
  FinishedFigures out;
  std::vector<std::pair<long, std::string>> failed;  // id, note
  for (Deferred& d : mine) {
    if (!d.reaped) {
      rusage ru{};
      while (wait4(d.pid, &d.status, 0, &ru) < 0 && errno == EINTR) {
      }
      d.cpu = cpu_of(ru);
    }
    out.cpu += d.cpu;
    const FigureResult r = figure_status(d.status, d.script, d.python);
    if (!r.ok) {
      if (out.ok) out.note = r.note;
      out.ok = false;
      failed.emplace_back(d.id, r.note);
    }
  }
  throw_if_interrupted();
  if (!failed.empty()) {
    const std::string path = section_dir + "/index.md";
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string md = ss.str();
    const std::lock_guard<std::mutex> lock(g_mu);
    for (const auto& [id, note] : failed) {
      for (const DeferredMd& m : g_md) {
        if (m.id != id) continue;
        const std::string repl = figure_md(FigureResult{false, note}, m.stem, m.caption);
        const std::size_t at = md.find(m.ok_md);
        if (at != std::string::npos) md.replace(at, m.ok_md.size(), repl);
      }
    }
    write_file_atomic(path, md);
  }
  return out;
}

void abandon_figures() {
  std::vector<Deferred> all;
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    all.swap(g_running);
  }
  for (const Deferred& d : all) {
    if (d.reaped) continue;  // gone already: its pid may be another process's by now
    kill(d.pid, SIGTERM);
    int status = 0;
    while (waitpid(d.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

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
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    if (g_defer) {
      const long id = g_next++;
      g_running.push_back({id, pid, script, python, section_dir});
      FigureResult r{true, ""};
      r.pending = id;
      return r;
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  throw_if_interrupted();
  return figure_status(status, script, python);
}

std::string figure_md(const FigureResult& fr, const std::string& stem, const std::string& caption) {
  if (!fr.ok) return "*(" + caption + ": " + fr.note + "; the data are in the CSVs.)*\n\n";
  std::string md =
      "![" + caption + "](" + stem + ".png)\n\n*" + caption + "* ([SVG](" + stem + ".svg))\n\n";
  if (fr.pending >= 0) {  // finish_figures swaps it for the note if the script fails
    const std::lock_guard<std::mutex> lock(g_mu);
    g_md.push_back({fr.pending, md, stem, caption});
  }
  return md;
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
