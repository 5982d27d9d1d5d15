// The temporaries of a run that a signal must not leave behind (docs/SEMANTICS.md 11.0): every
// temporary file and staging directory is registered here while it exists, and the handler that
// install_signal_cleanup() puts on SIGINT, SIGTERM and SIGHUP removes each registered path (a
// directory with its contents) before the process dies of the signal. Temporaries of processes
// that died of SIGKILL, which no handler sees, are swept by the next exmy that stages a file in
// the same directory (sweep_stale_temporaries). Host only; the handler is async-signal-safe.
#pragma once

#include <string>

namespace exmy::io {

// One registered path, unregistered on destruction (the owner removes or renames the path
// itself; the registry only acts on a signal). More than the registry's slots at once (256)
// are not registered: those are left to the sweep.
class PendingPath {
 public:
  PendingPath() = default;
  explicit PendingPath(const std::string& path);
  ~PendingPath() { release(); }
  PendingPath(PendingPath&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  PendingPath& operator=(PendingPath&& o) noexcept;
  PendingPath(const PendingPath&) = delete;
  PendingPath& operator=(const PendingPath&) = delete;
  // Unregisters now (after the path was renamed into place or removed).
  void release();

 private:
  int slot_ = -1;
};

// A child process (or, with `group`, its whole process group) that must not outlive a signal
// that ends exmy: the cleanup handler sends it SIGKILL before exmy dies. Unregistered on
// destruction (the owner waits for the child itself).
class PendingChild {
 public:
  PendingChild() = default;
  PendingChild(int pid, bool group);
  ~PendingChild() { release(); }
  PendingChild(PendingChild&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  PendingChild& operator=(PendingChild&& o) noexcept;
  PendingChild(const PendingChild&) = delete;
  PendingChild& operator=(const PendingChild&) = delete;
  void release();

 private:
  int slot_ = -1;
};

// Installs the cleanup handler on SIGINT, SIGTERM and SIGHUP (a signal inherited as ignored
// stays ignored: `nohup`, a background job). After removing the registered paths the handler
// restores the default action and raises the signal again, so the exit status says which
// signal ended the run (130 for Ctrl-C in a shell). Commands that handle SIGINT themselves
// (an orderly stop with a summary) put this handler back when they are done with theirs.
void install_signal_cleanup();
// The same handler on SIGINT only: what a command's own SIGINT handler restores, so that a
// second Ctrl-C still removes the temporaries before the process dies.
void restore_sigint_cleanup();

// Kills every registered child and removes every registered path now (async-signal-safe; used
// by the handler).
void remove_pending_paths() noexcept;

// Removes exmy's temporaries in `dir` (.exmy-tmp.PID.N, .exmy-stage.PID.N, .exmy-prev.PID.N) whose
// process PID no longer exists on this machine. Once per directory and process.
void sweep_stale_temporaries(const std::string& dir);

// The name prefix of every temporary, and a process-unique suffix "PID.N" for one.
std::string temporary_suffix();

}  // namespace exmy::io
