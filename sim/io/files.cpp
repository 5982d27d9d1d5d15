#include "sim/io/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "sim/common/error.hpp"

namespace exmy::io {

namespace {

// A process-unique suffix: PID and a counter, so that two staged files never collide.
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "." + std::to_string(counter++);
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
  const std::string tmp = dir_of(final_path) + "/.exmy-tmp." + unique_suffix();
  adopt(tmp, final_path);
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
  entries_.push_back({tmp, final_path, std::move(name)});
}

void OutputSet::commit() {
  // Before the first rename, what can be checked is: a directory squatting on an output's name
  // would make its rename fail after the earlier files were already replaced.
  for (std::size_t i = committed_; i < entries_.size(); ++i) {
    struct stat st {};
    if (::stat(entries_[i].final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      throw InputError(entries_[i].final_path + ": is a directory (expected a file to replace)");
    }
  }
  // A rename can still fail later (the temporary removed under us, permissions changed, an I/O
  // error). So that the set stays all-or-nothing then too, every file about to be replaced gets
  // a second name (a hard link: the old contents stay reachable after the rename replaces the
  // name); on a failure the renamed files are put back from those links, and files that did not
  // exist before are removed. Without hard links (link() failing) nothing is published.
  const std::size_t first = committed_;
  std::vector<std::string> backup(entries_.size());
  const auto drop_backups = [&] {
    for (const std::string& b : backup) {
      if (!b.empty()) ::unlink(b.c_str());
    }
  };
  for (std::size_t i = first; i < entries_.size(); ++i) {
    struct stat st {};
    if (::lstat(entries_[i].final_path.c_str(), &st) != 0) continue;  // a new file
    backup[i] = dir_of(entries_[i].final_path) + "/.exmy-prev." + unique_suffix();
    if (::link(entries_[i].final_path.c_str(), backup[i].c_str()) != 0) {
      backup[i].clear();
      drop_backups();
      throw InputError(entries_[i].final_path +
                       ": cannot keep the previous file while replacing it (hard link failed)");
    }
  }
  for (; committed_ < entries_.size(); ++committed_) {
    const Entry& e = entries_[committed_];
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
}

StagingDir::StagingDir(const std::string& parent)
    : path_(parent + "/.exmy-stage." + unique_suffix()) {
  if (::mkdir(path_.c_str(), 0700) != 0) {
    throw InputError(parent +
                     ": cannot create a temporary directory (expected a writable "
                     "directory)");
  }
}

StagingDir::~StagingDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace exmy::io
