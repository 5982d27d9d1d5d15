// Running the exmy executable from a test: where it is, its exit status, and the files it wrote.
// One copy for every CLI test (tests/cli, tests/quant, tests/optim, tests/gpu).
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace exmy::testing {

// A file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
inline std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p) {
  const std::string s = slurp(p);
  return std::vector<std::uint8_t>(s.begin(), s.end());
}
inline bool exists(const std::string& p) {
  struct stat sb {};
  return stat(p.c_str(), &sb) == 0;
}

// The exmy executable: $EXMY_CLI (ctest sets it), else beside this binary (the packed device
// binaries of scripts/pack-device-binaries.sh) or in the build tree's cli/; "" when none is found.
inline std::string cli() {
  if (const char* c = std::getenv("EXMY_CLI")) return c;
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return "";
  std::string dir(self, static_cast<std::size_t>(len));
  dir.resize(dir.rfind('/'));
  for (const std::string& c : {dir + "/exmy", dir + "/../cli/exmy"}) {
    if (exists(c)) return c;
  }
  return "";
}

// Exit status of `ENV exmy ARGS` (-1 if it did not exit); stdout is discarded, stderr goes to
// `err`.
inline int run(const std::string& args, const std::string& err = "/dev/null",
               const std::string& env = "") {
  const std::string cmd = env + " '" + cli() + "' " + args + " >/dev/null 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A fresh directory /tmp/PREFIX_XXXXXX ("" if it could not be made).
inline std::string make_tmpdir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
  const char* d = mkdtemp(tmpl.data());
  return d ? d : "";
}

// A fresh directory for one test case (make_tmpdir), removed with everything in it at the end.
struct TempDir {
  explicit TempDir(const std::string& prefix) : path(make_tmpdir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

// `exmy ARGS` with stdout and stderr captured (files in a directory of `prefix`, made once per
// prefix and process); status -1 when exmy did not exit normally (a signal killed it).
struct Captured {
  int status = -1;
  std::string out, err;
};
inline Captured run_captured(const std::string& args, const std::string& prefix) {
  const std::string dir = make_tmpdir(prefix);
  const std::string out = dir + "/out", err = dir + "/err";
  // Appended piecewise: `"'" + cli() + ...` trips GCC 12's -Wrestrict false positive at -O3.
  std::string cmd = "'";
  cmd += cli();
  cmd += "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  Captured c;
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  c.out = slurp(out);
  c.err = slurp(err);
  std::filesystem::remove_all(dir);
  return c;
}

}  // namespace exmy::testing
