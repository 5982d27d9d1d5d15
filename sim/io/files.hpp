// Files other than .npy arrays: small text inputs read with a size bound, and the commit of a
// run's several output files together (docs/SEMANTICS.md 11.0). Host only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/io/pending_paths.hpp"

namespace exmy::io {

// The bytes of a regular file of at most max_bytes, or InputError naming `path` and `expected`
// (what the file should be): missing, a directory, a device or pipe (/dev/zero never ends), or
// larger than the bound, each checked before anything is allocated.
std::string read_small_file(const std::string& path, std::size_t max_bytes,
                            const std::string& expected);

// One file written atomically: the text goes to a temporary file in the same directory, renamed
// over `path` when complete. Every temporary of this file is registered for removal on
// SIGINT/SIGTERM/SIGHUP (pending_paths.hpp); a path naming a device, pipe or socket is refused;
// commits to one directory by concurrent exmy runs take turns (an advisory lock), so that each
// run's outputs land together.
void write_text_atomic(const std::string& path, const std::string& text);

// The outputs of one run, appearing together or not at all. stage(final) names a temporary
// file in final's directory for the caller to write; commit() renames every staged file over
// its final path, in the order staged (so the file that marks a run complete, such as
// state.json, is staged last and appears last); the destructor removes every temporary not
// committed, so a failure anywhere before commit() leaves the previous outputs as they were.
// A rename failing halfway through commit() (a full disk cannot cause it: the data is already
// written) is rolled back: each replaced file was hard-linked to a second name first and is put
// back, files that were new are removed (docs/SEMANTICS.md 11.0).
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // A fresh temporary path beside `final_path`; InputError if final_path was staged already
  // (two outputs of one run naming the same file).
  std::string stage(const std::string& final_path);
  // Registers a file already written at `tmp` (same file system as final_path, e.g. in a
  // StagingDir inside its directory) as the temporary of final_path.
  void adopt(const std::string& tmp, const std::string& final_path);
  void commit();

 private:
  struct Entry {
    std::string tmp, final_path, canonical;
    PendingPath pending;  // removed by a signal until committed (staged temporaries only)
  };
  std::vector<Entry> entries_;
  std::size_t committed_ = 0;
};

// A temporary directory `parent`/.exmy-stage.PID.N, removed with its files on destruction or by
// a signal (pending_paths.hpp): for writers that write a set of files into a directory
// (optim::save_state, layer, report sections, golden corpora).
class StagingDir {
 public:
  explicit StagingDir(const std::string& parent);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  PendingPath pending_;
};

// Moves the finished directory `staged` (a StagingDir or a directory inside one, same file
// system) to `final_path` in one step. A final_path that exists is refused unless `replace`;
// with `replace` the two are exchanged atomically and the previous tree ends up at `staged`,
// for its StagingDir to remove. InputError naming final_path on any failure; nothing that
// exmy did not create is deleted.
void publish_directory(const std::string& staged, const std::string& final_path, bool replace);

// The directory that holds `path` ("." for a bare name; trailing slashes ignored), checked to be
// an existing directory: InputError naming `option` and why otherwise (missing, a file, a
// symlink loop, a name too long), never a filesystem exception.
std::string parent_directory(const std::string& path, const std::string& option);

// `path` as a writable directory, created (with its missing parents) if absent, before a run's
// work: InputError naming `option` and why (a file in the way, no permission, a name too long),
// never a filesystem exception. Returns whether it created the directory.
bool ensure_output_directory(const std::string& path, const std::string& option);

}  // namespace exmy::io
