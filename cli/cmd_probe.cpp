// exmy probe sfu ... (cli/probe_sfu.cpp)
// exmy probe gemm --device cuda --lib cublaslt --out PROFILE.json [--types T,...]
//                 [--shapes MxNxK,...]
// Infers the accumulation models of a black-box GEMM library on this machine's GPU and checks
// them bit for bit (docs/SEMANTICS.md 15.4). The library is driven through torch (cuBLASLt is
// what torch.mm calls on NVIDIA GPUs), so the probe itself is tools/probe_gemm.py, run by the
// Python interpreter $EXMY_PYTHON (default python3) with this exmy as the checker
// (`exmy gemm --device cuda`). The script is $EXMY_PROBE_SCRIPT or the source tree's.
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
#include "cli/probe_sfu.hpp"
#include "sim/common/error.hpp"

extern char** environ;

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy probe gemm --device cuda --lib cublaslt --out PROFILE.json [--types bf16,fp16,"
    "tf32,e4m3fn,e5m2,fp32] [--shapes MxNxK,...]\n"
    "  infers where the library's kernels restart accumulation along K (designed inputs; fp32 "
    "SGEMM:\n  its summation tree by cancellation pairs), writes the\n  accumulation model "
    "per input type and shape, and checks each against the "
    "library on random\n  inputs with `exmy gemm --device cuda` (needs torch with CUDA in "
    "$EXMY_PYTHON, default python3)\n";

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw InputError("exmy probe: cannot read /proc/self/exe");
  buf[n] = 0;
  return buf;
}

int run_probe(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("%s", kUsage);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "sfu") return run_probe_sfu(args);
  if (args[0] != "gemm") {
    throw InputError("probe '" + args[0] + "': expected gemm or sfu (" + kUsage + ")");
  }
  std::string device, lib, out, types, shapes;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--device") {
      device = option_value(args, i);
    } else if (a == "--lib") {
      lib = option_value(args, i);
    } else if (a == "--out") {
      out = option_value(args, i);
    } else if (a == "--types") {
      types = option_value(args, i);
    } else if (a == "--shapes") {
      shapes = option_value(args, i);
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else {
      throw InputError("argument '" + a + "': unexpected (" + kUsage + ")");
    }
  }
  if (device != "cuda") throw InputError("--device '" + device + "': expected cuda");
  if (lib != "cublaslt") throw InputError("--lib '" + lib + "': expected cublaslt (through torch)");
  if (out.empty()) throw InputError("--out: required (the profile to write)");
  const char* env_script = std::getenv("EXMY_PROBE_SCRIPT");
  const std::string script =
      env_script != nullptr && *env_script ? env_script : EXMY_SOURCE_DIR "/tools/probe_gemm.py";
  if (!std::filesystem::exists(script)) {
    throw InputError("probe script " + script + " not found (set EXMY_PROBE_SCRIPT)");
  }
  const char* env_py = std::getenv("EXMY_PYTHON");
  const std::string python = env_py != nullptr && *env_py ? env_py : "python3";
  std::vector<std::string> argv_s{python, script, "--out", out, "--exmy", self_path()};
  if (!types.empty()) argv_s.insert(argv_s.end(), {"--types", types});
  if (!shapes.empty()) argv_s.insert(argv_s.end(), {"--shapes", shapes});
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    throw InputError("cannot start " + python + " (set EXMY_PYTHON to a Python with torch)");
  }
  int status = 0;
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

EXMY_COMMAND("probe", run_probe,
             "probe gemm|sfu: infer a GPU library's accumulation models (through torch), or measure "
             "the GPU's approximate instructions, and check them");

}  // namespace exmy::cli
