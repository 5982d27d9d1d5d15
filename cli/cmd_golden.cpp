// exmy golden: golden corpora for other backends' CI (docs/SEMANTICS.md 13.7).
//   exmy golden generate [--suite cast|quantize|step|all] --out DIR [--seed S] [--shard i/N]
//   exmy golden merge DIR                         (the per-shard manifests into manifest.json)
//   exmy golden check DIR --results RDIR [--suite NAME] [--strict-nan] [--max-reported N]
//   exmy golden run --backend LIB.so DIR --out RDIR [--suite cast] [--device]
// check exits 0 when every result agrees, 1 on a mismatch or a case without results, 2 for bad
// input (a corrupt corpus, a malformed result file). run writes a backend plugin's outputs for
// the cast cases in check's layout (the plugin runs in a child process: a crash is reported).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "cli/backend_host.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/common/shard.hpp"
#include "sim/golden/corpus.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: exmy golden generate [--suite cast|quantize|step|all] --out DIR [--seed S] "
    "[--shard i/N] [--quiet]\n"
    "       exmy golden merge DIR\n"
    "       exmy golden check DIR --results RDIR [--suite NAME] [--strict-nan] "
    "[--max-reported N] [--allow-missing] [--json]\n"
    "       exmy golden run --backend LIB.so DIR --out RDIR [--suite cast] [--device]";

int usage_ok() {
  std::printf("%s\n", kUsage);
  return 0;
}

int generate(const Args& args) {
  golden::GenerateOptions o;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return usage_ok();
    if (a == "--suite") {
      o.suite = option_value(args, i);
    } else if (a == "--out") {
      o.out = option_value(args, i);
    } else if (a == "--seed") {
      o.seed = parse_uint(option_value(args, i), "--seed", ~std::uint64_t{0});
    } else if (a == "--shard") {
      o.shard = parse_shard(option_value(args, i));
    } else if (a == "--quiet") {
      o.progress = false;
    } else {
      throw InputError("unknown argument '" + a + "' (" + kUsage + ")");
    }
  }
  if (o.out.empty()) throw InputError("--out: expected the corpus directory");
  const golden::GenerateResult r = golden::generate(o);
  std::printf("golden corpus: %zu cases, %zu files, seed %llu, corpus_sha256 %s\n  %s\n", r.cases,
              r.files, static_cast<unsigned long long>(o.seed), r.corpus_sha256.c_str(),
              r.manifest_path.c_str());
  return 0;
}

int merge(const Args& args) {
  if (args.size() == 2 && (args[1] == "--help" || args[1] == "-h")) return usage_ok();
  if (args.size() != 2) throw InputError(std::string("merge: expected DIR (") + kUsage + ")");
  const golden::GenerateResult r = golden::merge(args[1]);
  std::printf("golden corpus merged: %zu cases, %zu files, corpus_sha256 %s\n  %s\n", r.cases,
              r.files, r.corpus_sha256.c_str(), r.manifest_path.c_str());
  return 0;
}

int check(const Args& args) {
  golden::CheckOptions o;
  bool json = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return usage_ok();
    if (a == "--results") {
      o.results = option_value(args, i);
    } else if (a == "--suite") {
      o.suite = option_value(args, i);
    } else if (a == "--strict-nan") {
      o.strict_nan = true;
    } else if (a == "--allow-missing") {
      o.allow_missing = true;
    } else if (a == "--max-reported") {
      o.max_reported = parse_uint(option_value(args, i), "--max-reported", 1000);
    } else if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] != '-' && o.corpus.empty()) {
      o.corpus = a;
    } else {
      throw InputError("unknown argument '" + a + "' (" + kUsage + ")");
    }
  }
  if (o.corpus.empty()) throw InputError("check: expected the corpus directory");
  if (o.results.empty()) throw InputError("--results: expected the directory of your outputs");
  if (!fs::is_directory(o.results)) {
    throw InputError("--results '" + o.results +
                     "': expected a directory laid out like the corpus");
  }
  const golden::CheckReport r = golden::check(o);
  if (json) {
    std::printf(
        "{\"ok\": %s, \"checks\": %llu, \"mismatches\": %llu, \"missing\": %llu, \"cases\": [",
        r.mismatches == 0 && (r.missing == 0 || o.allow_missing) ? "true" : "false",
        static_cast<unsigned long long>(r.checks), static_cast<unsigned long long>(r.mismatches),
        static_cast<unsigned long long>(r.missing));
    for (std::size_t k = 0; k < r.cases.size(); ++k) {
      const auto& c = r.cases[k];
      std::printf("%s{\"id\": %s, \"checks\": %llu, \"mismatches\": %llu, \"missing\": %s}",
                  k ? ", " : "", json_string(c.id).c_str(),
                  static_cast<unsigned long long>(c.checks),
                  static_cast<unsigned long long>(c.mismatches), c.missing ? "true" : "false");
    }
    std::printf("]}\n");
  } else {
    for (const auto& c : r.cases) {
      if (c.missing && c.checks == 0) {
        std::printf("%-48s no results\n", c.id.c_str());
        continue;
      }
      std::printf("%-48s %10llu checks %8llu mismatches%s\n", c.id.c_str(),
                  static_cast<unsigned long long>(c.checks),
                  static_cast<unsigned long long>(c.mismatches),
                  c.missing ? " (some outputs missing)" : "");
      for (const auto& line : c.first) std::printf("    %s\n", line.c_str());
    }
    std::printf("%s: %zu cases, %llu checks, %llu mismatches, %llu cases without results\n",
                r.mismatches == 0 && (r.missing == 0 || o.allow_missing) ? "PASS" : "FAIL",
                r.cases.size(), static_cast<unsigned long long>(r.checks),
                static_cast<unsigned long long>(r.mismatches),
                static_cast<unsigned long long>(r.missing));
  }
  const bool ok = r.mismatches == 0 && (r.missing == 0 || o.allow_missing);
  return ok ? 0 : 1;
}

// The cast cases of a corpus through a backend plugin, written in check's layout.
int run(const Args& args) {
  std::string library, corpus, out, suite = "cast";
  bool device = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return usage_ok();
    if (a == "--backend") {
      library = option_value(args, i);
    } else if (a == "--out") {
      out = option_value(args, i);
    } else if (a == "--suite") {
      suite = option_value(args, i);
    } else if (a == "--device") {
      device = true;
    } else if (!a.empty() && a[0] != '-' && corpus.empty()) {
      corpus = a;
    } else {
      throw InputError("unknown argument '" + a + "' (" + kUsage + ")");
    }
  }
  if (library.empty()) throw InputError("--backend: expected the plugin library (LIB.so)");
  if (corpus.empty()) throw InputError("run: expected the corpus directory");
  if (out.empty()) throw InputError("--out: expected the results directory");
  std::size_t ran = 0, unsupported = 0, crashed = 0, skipped = 0;
  for (const golden::CaseInfo& c : golden::list_cases(corpus, suite)) {
    if (c.op != "cast") {
      ++skipped;  // ABI 1 plugins implement casts; other entry points are reserved
      continue;
    }
    const io::NpyArray x = io::read_npy((fs::path(c.dir) / "x.npy").string());
    const std::vector<float> xs = io::as_f32(x, c.dir + "/x.npy");
    const Rounding r = parse_backend_rounding(c.round + "+" + c.overflow);
    BackendProcess backend(library, c.format, backend_rounding_text(r), xs.size(), device);
    const BackendCall call = backend.call(xs.data(), xs.size(), c.seed);
    if (call.status == BackendCall::Status::crashed ||
        call.status == BackendCall::Status::input_written ||
        call.status == BackendCall::Status::out_of_bounds) {
      std::fprintf(stderr, "%s: the backend %s (%s)\n", c.id.c_str(),
                   call.status == BackendCall::Status::crashed ? "crashed" : "misbehaved",
                   call.crash.c_str());
      ++crashed;
      continue;
    }
    if (call.status == BackendCall::Status::returned_nonzero) {
      ++unsupported;
      continue;
    }
    const fs::path dir = fs::path(out) / c.id;
    fs::create_directories(dir);
    if (backend.code_bytes() == 1) {
      std::vector<std::uint8_t> codes(backend.codes(), backend.codes() + xs.size());
      io::write_npy((dir / "codes.npy").string(), io::make_npy(codes));
    } else {
      std::vector<std::uint16_t> codes(xs.size());
      std::memcpy(codes.data(), backend.codes(), xs.size() * 2);
      io::write_npy((dir / "codes.npy").string(), io::make_npy(codes));
    }
    ++ran;
  }
  std::printf(
      "golden run: %zu cast cases written to %s, %zu unsupported by the backend, %zu "
      "crashed, %zu other cases skipped (ABI 1 runs casts)\n",
      ran, out.c_str(), unsupported, crashed, skipped);
  return crashed == 0 ? 0 : 1;
}

int run_golden(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return usage_ok();
  if (args[0] == "generate") return generate(args);
  if (args[0] == "merge") return merge(args);
  if (args[0] == "check") return check(args);
  if (args[0] == "run") return run(args);
  throw InputError("'" + args[0] + "': expected generate, merge, check or run (" + kUsage + ")");
}

}  // namespace

EXMY_COMMAND("golden", run_golden,
             "golden corpora for your CI: generate, check your outputs, run a backend plugin");

}  // namespace exmy::cli
