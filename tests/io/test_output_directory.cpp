// io::ensure_output_directory (sim/io/files.hpp): the directory of an output, made before a run's
// work. Regression for `exmy probe sfu --out DIR` (found running docs/tutorials/probe-a-gpu.md
// on an H200, 2026-12-02): a DIR that did not exist was refused only after 19 s of measuring,
// "cannot write (directory 'sfu' does not exist)", exit 2, nothing written.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sim/common/error.hpp"
#include "sim/io/files.hpp"

using exmy::InputError;
using exmy::io::ensure_output_directory;

TEST_CASE("ensure_output_directory creates, accepts and refuses", "[io][output_directory]") {
  char tmpl[] = "/tmp/exmy_outdir_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string d = tmpl;
  // Missing, with a missing parent: created.
  CHECK(ensure_output_directory(d + "/a/b", "--out"));
  struct stat st {};
  REQUIRE(::stat((d + "/a/b").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  // Existing: accepted, not created again.
  CHECK_FALSE(ensure_output_directory(d + "/a/b", "--out"));
  // A file in the way: refused by name, the file kept.
  std::FILE* f = std::fopen((d + "/file").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  CHECK_THROWS_WITH(ensure_output_directory(d + "/file", "--out"),
                    Catch::Contains("--out '" + d + "/file': exists and is not a directory"));
  CHECK_THROWS_AS(ensure_output_directory(d + "/file/sub", "--out"), InputError);
  CHECK(std::filesystem::is_regular_file(d + "/file"));
  CHECK_THROWS_AS(ensure_output_directory("", "--out"), InputError);
  // Read-only (unless root, who may write anyway).
  if (::geteuid() != 0) {
    REQUIRE(::chmod((d + "/a/b").c_str(), 0555) == 0);
    CHECK_THROWS_WITH(ensure_output_directory(d + "/a/b", "--out"),
                      Catch::Contains("not writable"));
    ::chmod((d + "/a/b").c_str(), 0755);
  }
  std::filesystem::remove_all(d);
}
