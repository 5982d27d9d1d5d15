// exmy verify --device cuda (the hidden command "verify-cuda" that cli/cmd_verify.cpp forwards
// to): the exhaustive GPU cast campaign of gpu/verify/verify.hpp.
//   exmy verify --device cuda [--campaign all|casts|hw] [--depth full|ci] [--formats a,b,...]
//        [--modes rne,rtz,sr:8,...] [--gpus N|all] [OPTIONS]   (exmy verify --device cuda --help)
// --gpus runs one child process per GPU (CUDA_VISIBLE_DEVICES), each a --shard of the inputs, and
// adds their cases up; more children than GPUs share them round-robin.
// --depth full sweeps all 2^32 fp32 inputs; ci each case's designed inputs (the tables of
// `exmy verify --backend --depth ci`, sim/verify/backend_inputs.hpp) plus 2^24 weighted random
// ones; --first/--count choose a range of codes instead. Exit status: 0 when the software casts
// agree with the CPU engine everywhere (hardware differences are findings, printed but not
// failures), 1 otherwise, 2 bad arguments. cli/cmd_verify.cpp forwards every argument but --device
// here.
#if EXMY_HAVE_CUDA
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/verify/verify.hpp"
#include "sim/common/error.hpp"
#include "sim/common/shard.hpp"
#include "sim/format/float_names.hpp"
#include "sim/io/files.hpp"
#include "sim/io/json.hpp"
#include "sim/io/pending_paths.hpp"

namespace exmy::cli {
namespace {

// The non-empty items of a comma list ("e4m3fn,,e5m2" names two formats, as it always has).
std::vector<std::string> list_items(const std::string& s) {
  std::vector<std::string> out;
  for (std::string& item : split_commas(s)) {
    if (!item.empty()) out.push_back(std::move(item));
  }
  return out;
}

std::string cases_json(const std::vector<gpu::CampaignCase>& cases) {
  std::ostringstream s;
  s << "{\"device\":" << json_string(gpu::device_name()) << ",\"cases\":[";
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    s << (k ? "," : "") << "{\"backend\":" << json_string(c.backend)
      << ",\"format\":" << json_string(c.format) << ",\"rounding\":" << json_string(c.rounding)
      << ",\"inputs\":" << c.inputs << ",\"mismatches\":" << c.mismatches << ",\"class_inputs\":{";
    for (int v = 0; v < 5; ++v) {
      s << (v ? "," : "") << "\"" << class_name(static_cast<ValueClass>(v))
        << "\":" << c.class_inputs[v];
    }
    s << "},\"class_mismatches\":{";
    for (int v = 0; v < 5; ++v) {
      s << (v ? "," : "") << "\"" << class_name(static_cast<ValueClass>(v))
        << "\":" << c.class_mismatches[v];
    }
    s << "},\"seconds\":" << c.seconds << "}";
  }
  s << "]}\n";
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  io::write_text_atomic(path, text);  // staged, removed on a signal (sim/io/files.hpp)
}

// ---- several GPUs: one child process per GPU, each a shard of the inputs ----------------------
// The k-th entry of CUDA_VISIBLE_DEVICES (or k itself), for child k of n on `visible` devices
// (children share devices round-robin when n > visible: the partition is tested on one GPU).
std::string child_device(int k, int visible) {
  std::vector<std::string> ids;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) ids = list_items(v);
  const int d = k % visible;
  return d < static_cast<int>(ids.size()) ? ids[d] : std::to_string(d);
}

std::vector<gpu::CampaignCase> cases_from_json(const std::string& text, const std::string& src) {
  const io::Json doc = io::parse_json(text, src);
  std::vector<gpu::CampaignCase> out;
  for (const io::Json& c : doc.at("cases", src).items) {
    gpu::CampaignCase k;
    k.backend = c.at("backend", src).str(src);
    k.format = c.at("format", src).str(src);
    k.rounding = c.at("rounding", src).str(src);
    k.inputs = c.at("inputs", src).u64(src);
    k.mismatches = c.at("mismatches", src).u64(src);
    const io::Json& ci = c.at("class_inputs", src);
    const io::Json& cm = c.at("class_mismatches", src);
    for (int v = 0; v < 5; ++v) {
      k.class_inputs[v] = ci.at(class_name(static_cast<ValueClass>(v)), src).u64(src);
      k.class_mismatches[v] = cm.at(class_name(static_cast<ValueClass>(v)), src).u64(src);
    }
    k.seconds = c.at("seconds", src).f64(src);
    out.push_back(std::move(k));
  }
  return out;
}

// Runs `args` (without --gpus) as n children `exmy verify-cuda ... --shard k/n --json`, and adds
// their cases up: the fp32 sweeps are split by input range and summed; the small hardware cases
// that do not take the range (hw-f16, hw-decode) run whole in every child and count once.
std::vector<gpu::CampaignCase> run_children(const Args& args, int n, int visible) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw InputError("--gpus: cannot find the exmy executable");
  self[len] = 0;
  char dir[] = "/tmp/exmy_gpus_XXXXXX";
  if (!mkdtemp(dir)) throw InputError("--gpus: cannot make a temporary directory");
  // The shards' directory and the children go with exmy, however it ends.
  const io::PendingPath pending_dir(dir);
  struct RemoveDir {
    const char* d;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } remove_dir{dir};
  std::vector<pid_t> pids(n);
  std::vector<io::PendingChild> pending_children;
  for (int k = 0; k < n; ++k) {
    std::vector<std::string> a = {self, "verify-cuda"};
    a.insert(a.end(), args.begin(), args.end());
    for (const char* x : {"--shard", "", "--json", "--quiet"}) a.push_back(x);
    a[a.size() - 3] = std::to_string(k) + "/" + std::to_string(n);
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
      if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0) env_s.push_back(*e);
    }
    env_s.push_back("CUDA_VISIBLE_DEVICES=" + child_device(k, visible));
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    const std::string out = std::string(dir) + "/" + std::to_string(k) + ".json";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pids[k], self, &fa, nullptr, argv.data(), envp.data()) != 0) {
      throw InputError("--gpus: cannot start child " + std::to_string(k));
    }
    pending_children.emplace_back(pids[k], false);
    posix_spawn_file_actions_destroy(&fa);
    std::fprintf(stderr, "[verify cuda] shard %d/%d on CUDA device %s (pid %d)\n", k, n,
                 child_device(k, visible).c_str(), static_cast<int>(pids[k]));
  }
  std::vector<gpu::CampaignCase> merged;
  std::string failure;
  for (int k = 0; k < n; ++k) {
    int st = 0;
    waitpid(pids[k], &st, 0);
    // Exit 0 or 1 (a mismatch) leave a complete JSON; anything else is a failed shard.
    if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
      failure += " shard " + std::to_string(k) + " ended with status " + std::to_string(st) + ";";
      continue;
    }
    const std::string out = std::string(dir) + "/" + std::to_string(k) + ".json";
    const auto part =
        cases_from_json(io::read_small_file(out, std::size_t{64} << 20, "a shard's JSON"), out);
    for (const auto& c : part) {
      gpu::CampaignCase* m = nullptr;
      for (auto& x : merged) {
        if (x.backend == c.backend && x.format == c.format && x.rounding == c.rounding) m = &x;
      }
      if (!m) {
        merged.push_back(c);
        continue;
      }
      if (c.backend == "hw-f16" || c.backend == "hw-decode") continue;  // whole in every shard
      m->inputs += c.inputs;
      m->mismatches += c.mismatches;
      for (int v = 0; v < 5; ++v) {
        m->class_inputs[v] += c.class_inputs[v];
        m->class_mismatches[v] += c.class_mismatches[v];
      }
      m->seconds = std::max(m->seconds, c.seconds);
    }
  }
  if (!failure.empty()) throw InputError("--gpus:" + failure);
  return merged;
}

int run_verify_cuda(const Args& args) {
  gpu::CampaignOptions o;
  const gpu::CampaignOptions d;
  std::string campaign = "all", out_path;
  bool json = false, full = true, have_first = false, have_count = false;
  Shard shard{};
  int gpus = 1;
  // The children of --gpus get every option but --gpus, --shard, --out, --json and --quiet
  // (run_children adds their own --shard, --json and --quiet).
  Args child_args;
  const auto forward = [&](const char* name, const std::string& v) {
    child_args.push_back(name);
    child_args.push_back(v);
  };
  Options opts(
      "exmy verify --device cuda [--campaign all|casts|hw] [--depth full|ci] [--formats F,...] "
      "[--modes MODE,...] [--gpus N|all] [OPTIONS]",
      "The exhaustive GPU cast campaign (gpu/verify/verify.hpp): the software casts against the "
      "CPU engine, the hardware conversions as findings. Exit 0 when the software casts agree "
      "everywhere (hardware differences are printed, not failures), 1 otherwise, 2 bad "
      "arguments.",
      "exmy verify --device cuda --depth ci --formats e4m3fn,e5m2 --modes rne,sr:8");
  opts.value({"--campaign"}, "all|casts|hw", "casts: the software casts; hw: the hardware's",
             campaign,
             [&](const std::string& v) {
               if (v != "all" && v != "casts" && v != "hw") {
                 throw InputError("--campaign '" + v +
                                  "': with --device cuda expected all, casts or hw");
               }
               campaign = v;
               forward("--campaign", v);
             })
      .value({"--depth"}, "full|ci",
             "full: all 2^32 fp32 inputs; ci: each case's designed inputs (boundary x pattern "
             "tables of every class, sr words at their edges) and 2^24 weighted random ones",
             "full",
             [&](const std::string& v) {
               if (v != "full" && v != "ci") {
                 throw InputError("--depth '" + v + "': expected full or ci");
               }
               full = v == "full";
               forward("--depth", v);
             })
      .value({"--threads"}, "N", "CPU threads computing the expected codes (0 to 4096)",
             "every core",
             [&](const std::string& v) {
               o.cpu_threads = static_cast<int>(parse_uint(v, "--threads", 4096));
               forward("--threads", v);
             })
      .value(
          {"--formats", "--format"}, "F[,F...]", "float formats of at most 16 bits",
          "every preset of at most 8 bits",
          [&](const std::string& v) {
            for (const auto& name : list_items(v)) {
              const auto f = parse_float_format(name);
              if (!f || f->total_bits() > 16) {
                throw InputError("--formats: '" + name + "' is not a float format of <= 16 bits");
              }
              o.formats.push_back(*f);
            }
            forward("--formats", v);
          })
      .value({"--modes", "--round"}, "MODE[,MODE...]", "roundings (rne, rtz, sr:8, ...)",
             "rne,rtz,sr:8",
             [&](const std::string& v) {
               for (const auto& m : list_items(v)) o.roundings.push_back(parse_rounding(m));
               forward("--modes", v);
             })
      .value({"--seed"}, "N", "Philox key of the sr words (stream 0, index = input code)",
             std::to_string(d.seed),
             [&](const std::string& v) {
               o.seed = parse_uint(v, "--seed", ~std::uint64_t{0});
               forward("--seed", v);
             })
      .value({"--path"}, "auto|generic|fast", "which device cast kernel", "auto",
             [&](const std::string& v) {
               if (v == "auto") {
                 o.path = gpu::CastPath::automatic;
               } else if (v == "generic") {
                 o.path = gpu::CastPath::generic;
               } else if (v == "fast") {
                 o.path = gpu::CastPath::fast;
               } else {
                 throw InputError("--path '" + v + "': expected auto, generic or fast");
               }
               forward("--path", v);
             })
      .value({"--reference"}, "cpu|device",
             "where a range's reference codes are computed: cpu (native::convert on the host's "
             "cores) or device (native::convert compiled for the GPU, beside the checked kernel: "
             "about 10x the rate; each case then adds a cast-reference row, the GPU's "
             "native::convert against the CPU's on the case's designed inputs)",
             "cpu",
             [&](const std::string& v) {
               if (v != "cpu" && v != "device") {
                 throw InputError("--reference '" + v + "': expected cpu or device");
               }
               o.device_reference = v == "device";
               forward("--reference", v);
             })
      .value({"--first"}, "N", "the first fp32 input code of the range",
             std::to_string(d.first) +
                 " (given with --count: a range instead of ci's designed "
                 "inputs)",
             [&](const std::string& v) {
               o.first = parse_uint(v, "--first", 0xFFFFFFFFull);
               have_first = true;
               forward("--first", v);
             })
      .value({"--count"}, "N", "how many fp32 inputs from --first", "2^32",
             [&](const std::string& v) {
               o.count = parse_uint(v, "--count", std::uint64_t{1} << 32);
               have_count = true;
               forward("--count", v);
             })
      .value({"--shard"}, "i/N", "run slice i of N of the input range (SEMANTICS 13.4)",
             shard.text() + " (the whole range)",
             [&](const std::string& v) { shard = parse_shard(v); })
      .value({"--gpus"}, "N|all", "one child process per GPU, each a shard of the inputs",
             std::to_string(gpus),
             [&](const std::string& g) {
               gpus = g == "all" ? -1 : static_cast<int>(parse_uint(g, "--gpus", 1024));
               if (gpus == 0) throw InputError("--gpus: expected all or a count >= 1");
             })
      .value({"--out"}, "FILE.md", "also write the markdown report to FILE.md", "none",
             [&](const std::string& v) { out_path = v; })
      .flag({"--json"}, "print the cases as one JSON object instead of markdown",
            [&] { json = true; })
      .flag({"--quiet"}, "no progress lines on stderr", [&] { o.progress = false; });
  if (!opts.parse(args)) return 0;
  // --depth ci: the designed inputs of every case (was a range of 2^26 codes at the top of the
  // fp32 range, which holds no zero, subnormal or in-range input of any narrow format).
  o.designed = !full && !have_first && !have_count;
  if (o.count == 0 || o.first + o.count > (std::uint64_t{1} << 32)) {
    throw InputError("--first/--count: expected a range inside [0, 2^32)");
  }
  if (gpu::device_count() == 0) {
    throw InputError("--device cuda: no CUDA device found");
  }
  const int visible = gpu::device_count();
  if (gpus == -1) gpus = visible;
  if (gpus > 1 && !shard.whole()) throw InputError("--gpus with --shard: choose one");
  // --shard i/N: slice i of the input range (13.4), or of every designed call, so N runs on N
  // machines add up.
  o.shard_index = shard.index;  // the designed calls (ci, and the cast-reference rows)
  o.shard_count = shard.count;
  if (!o.designed) {
    const std::uint64_t b = shard.begin(o.count), e = shard.end(o.count);
    o.first += b;
    o.count = e - b;
    if (o.count == 0) {
      throw InputError("--shard " + shard.text() + ": an empty slice of the inputs");
    }
  }
  o.software = campaign != "hw";
  o.hardware = campaign != "casts";
  // Formats of 9..16 bits are not exhaustively swept by default but may be asked for.
  const auto cases = gpus > 1 ? run_children(child_args, gpus, visible) : gpu::run_cast_campaign(o);
  std::string text =
      "# exmy GPU cast campaign on " + gpu::device_name() + "\n\n" + gpu::campaign_markdown(cases);
  if (!out_path.empty()) write_file(out_path, text);
  std::fputs(json ? cases_json(cases).c_str() : text.c_str(), stdout);
  for (const auto& c : cases) {
    if (c.backend.rfind("cast", 0) == 0 && c.mismatches != 0) return 1;
  }
  return 0;
}

}  // namespace

EXMY_COMMAND("verify-cuda", run_verify_cuda,
             "(hidden; use `exmy verify --device cuda`) exhaustive GPU cast campaign");

}  // namespace exmy::cli
#endif  // EXMY_HAVE_CUDA
