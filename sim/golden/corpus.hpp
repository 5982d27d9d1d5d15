// Golden corpora (docs/SEMANTICS.md 13.7): versioned sets of inputs and the outputs exmy's
// reference computes for them, as .npy files with a manifest, for other backends' CI.
//   generate(): the cases of a suite (casts per format × rounding × overflow policy,
//     quantization per scheme × variant, optimizer steps per optimizer × dtype × profile), each a
//     directory `<suite>/<case>/` holding case.json, its inputs and `expected/<output>.npy`;
//     manifest.json at the top names the generator (exmy version, SEMANTICS revision, git SHA,
//     seed) and the sha256 of every file.
//   check(): compares a results directory laid out like the corpus (`<suite>/<case>/<output>.npy`)
//     with the expected outputs, after verifying every corpus file against its hash.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/common/shard.hpp"

namespace exmy::golden {

// The corpus layout version (case.json fields, file names) and the SEMANTICS revision whose
// definitions produced the default suite; changing what the default suite contains is a
// deliberate bump of kCorpusVersion (the test pinning its hash says so).
inline constexpr int kCorpusVersion = 8;
inline constexpr const char* kSemanticsRevision = "2026-12-01";
inline constexpr std::uint64_t kDefaultSeed = 20261124;

// "cast", "quantize", "step"; "all" (= "default") is every suite.
std::vector<std::string> suite_names();

struct GenerateOptions {
  std::string suite = "all";
  std::string out;
  std::uint64_t seed = kDefaultSeed;
  Shard shard{};  // which cases this process writes (13.4); the manifest is per shard
  bool progress = true;
};
struct GenerateResult {
  std::size_t cases = 0, files = 0;
  std::string corpus_sha256;  // sha256 of the sorted "hash  path" lines (stable across builds)
  std::string manifest_path;
};
// Writes the corpus into opt.out (created; an existing corpus there is replaced only when the
// new one is complete: files go to a staging directory first). InputError on bad options.
GenerateResult generate(const GenerateOptions& opt);

struct CheckOptions {
  std::string corpus, results;
  std::string suite = "all";   // check only the cases of one suite
  bool strict_nan = false;     // fp32 NaNs compare by bits, not as a class
  bool allow_missing = false;  // cases without results are listed, not failed
  std::size_t max_reported = 5;
};
struct CaseReport {
  std::string id;
  std::uint64_t checks = 0, mismatches = 0;
  bool missing = false;            // no result files for this case
  std::vector<std::string> first;  // first mismatches, operands in hex
};
struct CheckReport {
  std::vector<CaseReport> cases;
  std::uint64_t checks = 0, mismatches = 0, missing = 0;
};
// InputError (exit 2) for a corrupt corpus (a hash mismatch, a missing or extra file, a bad
// manifest or case.json) or a malformed result file (wrong dtype or shape).
CheckReport check(const CheckOptions& opt);

// Merges the per-shard manifests of `dir` (manifest-shard-I-of-N.json, all N present) into
// manifest.json; InputError when a shard is missing or two disagree on the generator.
GenerateResult merge(const std::string& dir);

// A case as a backend runner sees it (for `exmy golden run --backend`).
struct CaseInfo {
  std::string id;   // "<suite>/<case>"
  std::string dir;  // corpus_dir/id
  std::string op;   // "cast", "quantize", "step"
  std::string format, round, overflow;
  std::uint64_t seed = 0;
};
std::vector<CaseInfo> list_cases(const std::string& corpus, const std::string& suite);

}  // namespace exmy::golden
