#include "sim/io/files.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sim/common/error.hpp"
#include "sim/io/pending_paths.hpp"

namespace exmy::io {

namespace {

std::string unique_suffix() {
  return temporary_suffix();
}

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The path as one spelling: x.npy, ./x.npy and d/../x.npy are one file.
std::string canonical_name(const std::string& path) {
  std::error_code ec;
  const auto c = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : c.string();
}

// An output path that is not a regular file (a device such as /dev/null, a pipe, a socket):
// renaming over it would replace the node with a file, so it is refused.
void refuse_special(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    throw InputError(path + ": is a directory (expected a file to replace)");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(path +
                     ": is a device, pipe or socket (expected a regular file or a new name; exmy "
                     "replaces outputs by renaming, which would replace the node)");
  }
}

// Exclusive advisory locks (flock) on the directories of an output set, taken in name order so
// that two writers never deadlock; released when destroyed. Two exmy runs committing to the
// same outputs so take turns, and each set lands whole.
struct DirLocks {
  std::vector<int> fds;
  explicit DirLocks(std::vector<std::string> dirs) {
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    for (const std::string& d : dirs) {
      const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;  // the rename reports the problem
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
      fds.push_back(fd);
    }
  }
  ~DirLocks() {
    for (int fd : fds) ::close(fd);
  }
  DirLocks(const DirLocks&) = delete;
  DirLocks& operator=(const DirLocks&) = delete;
};

// Fault injection for the signal tests (tests/cli/test_cli_hostile_round2.cpp): with
// EXMY_FAULT_PAUSE_AT_COMMIT=FILE, the first commit of a run creates FILE and waits there for a
// signal (pause), with its temporaries written, so that a test can signal a writer at that point on
// a loaded machine without guessing times. Unset (always, outside tests) it costs one getenv.
void fault_pause_at_commit() {
  static bool done = false;
  const char* ready = std::getenv("EXMY_FAULT_PAUSE_AT_COMMIT");
  if (ready == nullptr || done) return;
  done = true;
  const int fd = ::open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  // Until a signal arrives: one that kills ends the process here; one that a command handles
  // (report's and verify's Ctrl-C flag) returns, and the run goes on to notice its flag.
  ::pause();
}

// EXMY_FAULT_HOLD_COMMIT=FILE: the first commit of a set of two or more files, after its first
// rename (the directory locks held), creates FILE and waits until FILE is removed: the tests
// start a second writer of the same outputs meanwhile and check that the two never mix.
void fault_hold_in_commit() {
  static bool done = false;
  const char* hold = std::getenv("EXMY_FAULT_HOLD_COMMIT");
  if (hold == nullptr || done) return;
  done = true;
  const int fd = ::open(hold, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  struct stat st {};
  for (int i = 0; i < 12000 && ::stat(hold, &st) == 0; ++i) ::usleep(50 * 1000);
}

}  // namespace

std::string read_small_file(const std::string& path, std::size_t max_bytes,
                            const std::string& expected) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open for reading (expected " + expected + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw InputError(path + ": cannot read (expected " + expected + ")");
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory (expected " + expected + ")");
  if (!S_ISREG(st.st_mode)) {
    throw InputError(path + ": is not a regular file (expected " + expected + ")");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) {
    throw InputError(path + ": " + std::to_string(size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " expected of " + expected);
  }
  std::string text(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, text.data() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  text.resize(got);  // a file that shrank while read: what is there
  return text;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  OutputSet out;
  const std::string tmp = out.stage(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(path + ": cannot open for writing");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw InputError(path + ": write failed");
  out.commit();
}

OutputSet::~OutputSet() {
  for (std::size_t i = committed_; i < entries_.size(); ++i) std::remove(entries_[i].tmp.c_str());
}

std::string OutputSet::stage(const std::string& final_path) {
  // The directory must exist: the temporary goes there, and its error would name the temporary.
  struct stat st {};
  const std::string dir = dir_of(final_path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw InputError(final_path + ": cannot write (directory '" + dir + "' does not exist)");
  }
  refuse_special(final_path);  // before the run's work, not only at commit
  sweep_stale_temporaries(dir);
  const std::string tmp = dir + "/.exmy-tmp." + unique_suffix();
  adopt(tmp, final_path);
  entries_.back().pending = PendingPath(tmp);
  return tmp;
}

void OutputSet::adopt(const std::string& tmp, const std::string& final_path) {
  if (committed_ != 0) throw InputError(final_path + ": staged after commit");
  // Canonical names are computed once per entry (a corpus stages thousands of files).
  std::string name = canonical_name(final_path);
  for (const Entry& e : entries_) {
    if (e.canonical == name) {
      throw InputError("'" + final_path + "' and '" + e.final_path +
                       "' name the same file: expected distinct outputs");
    }
  }
  entries_.push_back({tmp, final_path, std::move(name), PendingPath()});
}

void OutputSet::commit() {
  fault_pause_at_commit();
  // One committer at a time per directory (another exmy writing the same outputs waits).
  std::vector<std::string> dirs;
  for (std::size_t i = committed_; i < entries_.size(); ++i) {
    dirs.push_back(dir_of(entries_[i].final_path));
  }
  const DirLocks locks(std::move(dirs));
  // Before the first rename, what can be checked is: a directory squatting on an output's name
  // would make its rename fail after the earlier files were already replaced; a device node
  // would be replaced by a file.
  for (std::size_t i = committed_; i < entries_.size(); ++i) refuse_special(entries_[i].final_path);
  // A rename can still fail later (the temporary removed under us, permissions changed, an I/O
  // error). So that the set stays all-or-nothing then too, every file about to be replaced gets
  // a second name (a hard link: the old contents stay reachable after the rename replaces the
  // name); on a failure the renamed files are put back from those links, and files that did not
  // exist before are removed. Without hard links (link() failing) nothing is published.
  const std::size_t first = committed_;
  std::vector<std::string> backup(entries_.size());
  std::vector<PendingPath> backup_pending;  // a signal mid-commit leaves no second names
  backup_pending.reserve(entries_.size());
  const auto drop_backups = [&] {
    for (const std::string& b : backup) {
      if (!b.empty()) ::unlink(b.c_str());
    }
  };
  for (std::size_t i = first; i < entries_.size(); ++i) {
    struct stat st {};
    if (::lstat(entries_[i].final_path.c_str(), &st) != 0) continue;  // a new file
    backup[i] = dir_of(entries_[i].final_path) + "/.exmy-prev." + unique_suffix();
    backup_pending.emplace_back(backup[i]);
    if (::link(entries_[i].final_path.c_str(), backup[i].c_str()) != 0) {
      backup[i].clear();
      drop_backups();
      throw InputError(entries_[i].final_path +
                       ": cannot keep the previous file while replacing it (hard link failed)");
    }
  }
  for (; committed_ < entries_.size(); ++committed_) {
    const Entry& e = entries_[committed_];
    if (committed_ == first + 1) fault_hold_in_commit();
    if (std::rename(e.tmp.c_str(), e.final_path.c_str()) != 0) {
      // Roll back what this commit published, newest first.
      bool restored = true;
      for (std::size_t j = committed_; j-- > first;) {
        const std::string& f = entries_[j].final_path;
        if (!backup[j].empty()) {
          restored &= std::rename(backup[j].c_str(), f.c_str()) == 0;
          if (restored) backup[j].clear();
        } else {
          restored &= ::unlink(f.c_str()) == 0;
        }
      }
      drop_backups();
      // The temporaries not renamed (this one included) go; the set is spent.
      for (std::size_t j = committed_; j < entries_.size(); ++j) {
        std::remove(entries_[j].tmp.c_str());
      }
      committed_ = entries_.size();
      throw InputError(e.final_path + ": cannot rename the temporary file into place" +
                       (restored ? std::string(" (the previous outputs were restored)")
                                 : std::string(" (restoring the previous outputs failed too)")));
    }
  }
  drop_backups();
  for (Entry& e : entries_) e.pending.release();
}

StagingDir::StagingDir(const std::string& parent)
    : path_(parent + "/.exmy-stage." + unique_suffix()) {
  sweep_stale_temporaries(parent);
  if (::mkdir(path_.c_str(), 0700) != 0) {
    throw InputError(parent + ": cannot create a temporary directory (" + std::strerror(errno) +
                     "; expected a writable directory)");
  }
  pending_ = PendingPath(path_);
}

void publish_directory(const std::string& staged, const std::string& final_path, bool replace) {
  // RENAME_NOREPLACE: a directory made meanwhile (another run, the user) is never replaced;
  // RENAME_EXCHANGE swaps the two trees in one step, so that the old one is never missing.
  constexpr unsigned kNoReplace = 1, kExchange = 2;
  struct stat st {};
  const bool exists = ::lstat(final_path.c_str(), &st) == 0;
  if (exists && !replace) {
    throw InputError(final_path + ": exists (expected a new directory; nothing was replaced)");
  }
  if (exists && !S_ISDIR(st.st_mode)) {
    throw InputError(final_path + ": exists and is not a directory (expected a directory)");
  }
  // The staging directory was made 0700; the published one gets the usual mode (umask applied).
  const mode_t um = ::umask(0);
  ::umask(um);
  ::chmod(staged.c_str(), 0777 & ~um);
  const unsigned flags = exists ? kExchange : kNoReplace;
  long rc = ::syscall(SYS_renameat2, AT_FDCWD, staged.c_str(), AT_FDCWD, final_path.c_str(), flags);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    // A file system without renameat2's flags: rename, which refuses a non-empty target.
    if (exists) {
      const std::string old = staged + ".old";
      if (::rename(final_path.c_str(), old.c_str()) != 0) {
        throw InputError(final_path + ": cannot move the previous directory aside (" +
                         std::strerror(errno) + ")");
      }
      rc = ::rename(staged.c_str(), final_path.c_str());
      if (rc != 0) ::rename(old.c_str(), final_path.c_str());
      if (rc == 0) ::rename(old.c_str(), staged.c_str());
    } else {
      rc = ::rename(staged.c_str(), final_path.c_str());
    }
  }
  if (rc != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) {
      throw InputError(final_path +
                       ": appeared while this run was writing (another run or process); nothing "
                       "was replaced");
    }
    throw InputError(final_path + ": cannot move the finished directory into place (" +
                     std::strerror(errno) + ")");
  }
}

StagingDir::~StagingDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace exmy::io

namespace exmy::io {

std::string parent_directory(const std::string& path, const std::string& option) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.empty()) throw InputError(option + " '': expected a directory name");
  const std::string dir = dir_of(p);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw InputError(option + " '" + path + "': its parent directory '" + dir +
                     "' cannot be used (" + std::strerror(errno) + ")");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw InputError(option + " '" + path + "': '" + dir + "' is not a directory");
  }
  return dir;
}

bool ensure_output_directory(const std::string& path, const std::string& option) {
  if (path.empty()) throw InputError(option + " '': expected a directory name");
  struct stat st {};
  bool created = false;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      throw InputError(option + " '" + path + "': cannot be used (" + std::strerror(errno) + ")");
    }
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) {
      throw InputError(option + " '" + path + "': cannot create the directory (" + ec.message() +
                       ")");
    }
    created = true;
    if (::stat(path.c_str(), &st) != 0) {
      throw InputError(option + " '" + path + "': cannot be used (" + std::strerror(errno) + ")");
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    throw InputError(option + " '" + path + "': exists and is not a directory");
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    throw InputError(option + " '" + path + "': not writable (" + std::strerror(errno) + ")");
  }
  return created;
}

}  // namespace exmy::io
