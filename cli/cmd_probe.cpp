// exmy probe sfu ... (cli/probe_sfu.cpp)
// exmy probe gemm --device cuda --lib cublaslt --out PROFILE.json [--types T,...]
//                 [--shapes MxNxK,...] [--launch [--random N] [--seed S]]
// Infers the accumulation models of a black-box GEMM library on this machine's GPU and checks
// them bit for bit (docs/SEMANTICS.md 15.4). The library is driven through torch (cuBLASLt is
// what torch.mm calls on NVIDIA GPUs), so the probe itself is tools/probe_gemm.py, run by the
// Python interpreter $EXMY_PYTHON (default python3) with this exmy as the checker
// (`exmy gemm --device cuda`). The script is $EXMY_PROBE_SCRIPT or the source tree's.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/probe_sfu.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/pending_paths.hpp"

extern char** environ;

namespace exmy::cli {
namespace {

// What `exmy probe gemm` was asked for.
struct GemmProbe {
  std::string out, types, shapes;  // --device and --lib are checked, not kept: one value each
  bool launch = false;             // record kernel launches (tools/gemm_launch.py) instead
  std::string random, seed;
};

Options gemm_options(GemmProbe& g) {
  Options opts(
      "exmy probe gemm --device cuda --lib cublaslt --out PROFILE.json [--types T,...] "
      "[--shapes MxNxK,...]",
      "Infers where the library's kernels restart accumulation along K (designed inputs; fp32 "
      "SGEMM: its summation tree by cancellation pairs), writes the accumulation model per input "
      "type and shape, and checks each against the library on random inputs with `exmy gemm "
      "--device cuda` (needs torch with CUDA in $EXMY_PYTHON, default python3; the script is "
      "$EXMY_PROBE_SCRIPT or the source tree's tools/probe_gemm.py).",
      "exmy probe gemm --device cuda --lib cublaslt --out gemm-profile.json --types bf16");
  opts.value({"--device"}, "cuda", "where the library runs (only cuda)", Options::kRequired,
             [&](const std::string& v) {
               if (v != "cuda") throw InputError("--device '" + v + "': expected cuda");
             })
      .value({"--lib"}, "cublaslt", "the library under test (cuBLASLt, through torch.mm)",
             Options::kRequired,
             [&](const std::string& v) {
               if (v != "cublaslt") {
                 throw InputError("--lib '" + v + "': expected cublaslt (through torch)");
               }
             })
      .value({"--out"}, "PROFILE.json", "the profile to write", Options::kRequired,
             [&](const std::string& v) {
               if (v.empty()) throw InputError("--out '': expected the profile to write");
               g.out = v;
             })
      .value({"--types"}, "T[,T...]", "input types: bf16, fp16, tf32, e4m3fn, e5m2, fp32",
             "bf16,fp16,tf32,e4m3fn,e5m2,fp32 (the script's)",
             [&](const std::string& v) { g.types = v; })
      .value({"--shapes"}, "MxNxK[,MxNxK...]", "GEMM shapes to probe",
             "the script's DEFAULT_SHAPES", [&](const std::string& v) { g.shapes = v; })
      .flag({"--launch"},
            "record the kernel, tile and split count cuBLAS launches per input type, output type "
            "and shape, merged into --out (EXMY_GEMM_PROFILE=PROFILE.json makes those shapes "
            "verified where the kernel family's rule is; docs/SEMANTICS.md 15.6)",
            [&] { g.launch = true; })
      .value({"--random"}, "N", "with --launch: N random shapes instead of --shapes", "none",
             [&](const std::string& v) {
               g.random = std::to_string(number::parse_u64(v, "--random", 1000000));
             })
      .value({"--seed"}, "S", "with --random: the shapes' seed", "1", [&](const std::string& v) {
        g.seed = std::to_string(number::parse_u64(v, "--seed", ~std::uint64_t{0} >> 1));
      });
  return opts;
}

// `exmy probe` without a known sub-command: its help names them with their usage lines (from
// their option tables).
Options probe_options() {
  GemmProbe unused;
  Options opts("exmy probe gemm|sfu [OPTIONS]",
               "Probes of this machine's GPU:\n  " + gemm_options(unused).usage() + "\n  " +
                   probe_sfu_usage() +
                   "\n(exmy probe gemm --help and exmy probe sfu --help list their options)",
               "exmy probe sfu --device cuda --out sfu-profile");
  opts.positional("SUB", "gemm or sfu", Options::kRequired, [](const std::string& sub) {
    throw InputError("probe '" + sub + "': expected gemm or sfu (try exmy probe --help)");
  });
  return opts;
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw InputError("exmy probe: cannot read /proc/self/exe");
  buf[n] = 0;
  return buf;
}

int run_probe(const Args& args) {
  const Args rest(args.empty() ? args.end() : args.begin() + 1, args.end());
  if (!args.empty() && args[0] == "sfu") return run_probe_sfu(rest);
  if (args.empty() || args[0] != "gemm") {
    const Options opts = probe_options();
    if (!opts.parse(args)) return 0;
    // No sub-command at all: the help, and the exit status of bad usage.
    std::fputs(opts.help().c_str(), stdout);
    return 2;
  }
  GemmProbe g;
  if (!gemm_options(g).parse(rest)) return 0;
  if (!g.launch && (!g.random.empty() || !g.seed.empty())) {
    throw InputError(
        "--random / --seed: only with --launch (they draw the shapes whose launches are recorded)");
  }
  const std::string &out = g.out, &types = g.types, &shapes = g.shapes;
  const char* env_script = std::getenv("EXMY_PROBE_SCRIPT");
  const std::string script =
      env_script != nullptr && *env_script ? env_script : EXMY_SOURCE_DIR "/tools/probe_gemm.py";
  if (!std::filesystem::exists(script)) {
    throw InputError("probe script " + script + " not found (set EXMY_PROBE_SCRIPT)");
  }
  const char* env_py = std::getenv("EXMY_PYTHON");
  const std::string python = env_py != nullptr && *env_py ? env_py : "python3";
  // The probe measures cuBLAS through torch: a Python without it is one line here, not the
  // script's traceback.
  {
    std::vector<std::string> check_s{python, "-c", "import torch"};
    std::vector<char*> check;
    for (auto& a : check_s) check.push_back(a.data());
    check.push_back(nullptr);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
    pid_t cpid = 0;
    const bool started =
        posix_spawnp(&cpid, python.c_str(), &quiet, nullptr, check.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&quiet);
    int cst = 0;
    if (started) {
      const io::PendingChild pending(cpid, false);
      waitpid(cpid, &cst, 0);
    }
    if (!started || !WIFEXITED(cst) || WEXITSTATUS(cst) != 0) {
      throw InputError(python + (started ? ": cannot import torch" : ": cannot be started") +
                       " (exmy probe gemm measures the GPU library through torch; set "
                       "EXMY_PYTHON to a Python with torch and CUDA)");
    }
  }
  std::vector<std::string> argv_s{python, script, "--out", out, "--exmy", self_path()};
  if (!types.empty()) argv_s.insert(argv_s.end(), {"--types", types});
  if (!shapes.empty()) argv_s.insert(argv_s.end(), {"--shapes", shapes});
  if (g.launch) argv_s.push_back("--launch");
  if (!g.random.empty()) argv_s.insert(argv_s.end(), {"--random", g.random});
  if (!g.seed.empty()) argv_s.insert(argv_s.end(), {"--seed", g.seed});
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    throw InputError("cannot start " + python + " (set EXMY_PYTHON to a Python with torch)");
  }
  int status = 0;
  const io::PendingChild pending(pid, false);  // a signal that ends exmy ends the probe too
  if (waitpid(pid, &status, 0) < 0) throw InputError("exmy probe: waitpid failed");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "exmy probe gemm: the probe failed (%s exited %d); nothing written\n",
                 python.c_str(), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 1;
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND(
    "probe", run_probe,
    "probe gemm|sfu: infer a GPU library's accumulation models (through torch), or measure "
    "the GPU's approximate instructions, and check them");

}  // namespace exmy::cli
