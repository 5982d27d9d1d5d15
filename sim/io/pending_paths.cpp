#include "sim/io/pending_paths.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace exmy::io {

namespace {

// A fixed table, so that the handler reads it without locks or allocation: state 0 free,
// 1 being filled, 2 registered.
constexpr int kSlots = 256;
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
// Children: the pid to kill (negative: a process group), 0 when free.
constexpr int kChildSlots = 64;
std::atomic<int> g_children[kChildSlots];

// Removes what `dirfd` holds, directories recursively up to a depth (exmy's staging trees are
// shallow: a corpus is suite/case/expected/file). Only system calls: async-signal-safe.
void remove_contents(int dirfd, int depth) noexcept {
  alignas(8) char buf[4096];
  for (int pass = 0; pass < 64; ++pass) {
    bool removed = false;
    ::lseek(dirfd, 0, SEEK_SET);
    for (;;) {
      const long n = ::syscall(SYS_getdents64, dirfd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct Entry {
          unsigned long long ino;
          long long off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        const auto* e = reinterpret_cast<const Entry*>(buf + off);
        off += e->reclen;
        if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
        if (::unlinkat(dirfd, e->name, 0) == 0) {
          removed = true;
          continue;
        }
        if ((errno == EISDIR || errno == EPERM) && depth > 0) {
          const int sub = ::openat(dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0) {
            remove_contents(sub, depth - 1);
            ::close(sub);
          }
          if (::unlinkat(dirfd, e->name, AT_REMOVEDIR) == 0) removed = true;
        }
      }
    }
    if (!removed) return;
  }
}

void remove_path(const char* path) noexcept {
  if (::unlink(path) == 0 || errno == ENOENT) return;
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  remove_contents(fd, 8);
  ::close(fd);
  ::rmdir(path);
}

extern "C" void exmy_cleanup_on_signal(int sig) {
  const int saved = errno;
  remove_pending_paths();
  // SA_RESETHAND restored the default action; raising again ends the process by the signal.
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  ::sigprocmask(SIG_UNBLOCK, &s, nullptr);
  ::raise(sig);
  errno = saved;
}

void install_on(int sig, bool keep_ignored) {
  struct sigaction old {};
  if (keep_ignored && ::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = exmy_cleanup_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  ::sigaction(sig, &sa, nullptr);
}

// "PID" of a name PREFIX.PID.N, or 0 when the name is not one of exmy's temporaries.
pid_t owner_of(const char* name) {
  for (const char* prefix : {".exmy-tmp.", ".exmy-stage.", ".exmy-prev."}) {
    const std::size_t k = std::strlen(prefix);
    if (std::strncmp(name, prefix, k) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name + k, &end, 10);
    if (end == name + k || *end != '.' || pid <= 0) return 0;
    const char* n = end + 1;
    if (*n == '\0') return 0;
    for (; *n; ++n) {
      if (*n < '0' || *n > '9') return 0;
    }
    return static_cast<pid_t>(pid);
  }
  return 0;
}

}  // namespace

PendingPath::PendingPath(const std::string& path) {
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    slot_ = i;
    return;
  }
}

PendingPath& PendingPath::operator=(PendingPath&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void PendingPath::release() {
  if (slot_ >= 0) g_slots[slot_].state.store(0);
  slot_ = -1;
}

PendingChild::PendingChild(int pid, bool group) {
  if (pid <= 0) return;
  for (int i = 0; i < kChildSlots; ++i) {
    int expected = 0;
    if (g_children[i].compare_exchange_strong(expected, group ? -pid : pid)) {
      slot_ = i;
      return;
    }
  }
}

PendingChild& PendingChild::operator=(PendingChild&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void PendingChild::release() {
  if (slot_ >= 0) g_children[slot_].store(0);
  slot_ = -1;
}

void remove_pending_paths() noexcept {
  for (auto& c : g_children) {
    const int pid = c.load();
    if (pid != 0) ::kill(pid, SIGKILL);
  }
  for (Slot& s : g_slots) {
    if (s.state.load() == 2) remove_path(s.path);
  }
}

void install_signal_cleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) install_on(sig, true);
}

void restore_sigint_cleanup() {
  install_on(SIGINT, false);
}

void sweep_stale_temporaries(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> swept;
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (!swept.insert(dir).second) return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const pid_t self = ::getpid();
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = owner_of(e->d_name);
    if (pid == 0 || pid == self) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    remove_path((dir + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

std::string temporary_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace exmy::io
