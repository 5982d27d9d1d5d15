// exmy verify --device cuda (the hidden command "verify-cuda" that cli/cmd_verify.cpp forwards
// to): the exhaustive GPU cast campaign of gpu/verify/verify.hpp.
//   exmy verify --device cuda [--campaign all|casts|hw] [--depth full|ci] [--threads N]
//        [--formats a,b,...] [--modes rne,rtz,sr:8,...] [--seed N] [--path auto|generic|fast]
//        [--first N --count N] [--shard i/N] [--gpus N|all] [--out FILE.md] [--json] [--quiet]
// --gpus runs one child process per GPU (CUDA_VISIBLE_DEVICES), each a --shard of the inputs, and
// adds their cases up; more children than GPUs share them round-robin.
// --depth full sweeps all 2^32 fp32 inputs; ci the 2^26 inputs below and through the top binade
// (large normals, inf, NaN). Exit status: 0 when the software casts agree with the CPU engine
// everywhere (hardware differences are findings, printed but not failures), 1 otherwise,
// 2 bad arguments. cli/cmd_verify.cpp forwards every argument but --device here.
// --threads, --depth, --json, --quiet); the others need `exmy verify-cuda` directly.
#if EXMY_HAVE_CUDA
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/verify/verify.hpp"
#include "sim/common/error.hpp"
#include "sim/common/shard.hpp"
#include "sim/format/float_names.hpp"
#include "sim/io/files.hpp"
#include "sim/io/json.hpp"

namespace exmy::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ',')) {
    if (!cur.empty()) out.push_back(cur);
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
      << ",\"inputs\":" << c.inputs << ",\"mismatches\":" << c.mismatches
      << ",\"class_mismatches\":{";
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
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw InputError("--out '" + path + "': cannot write");
    f << text;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw InputError("--out '" + path + "': cannot rename the temporary file");
  }
}

// ---- several GPUs: one child process per GPU, each a shard of the inputs ----------------------
// The k-th entry of CUDA_VISIBLE_DEVICES (or k itself), for child k of n on `visible` devices
// (children share devices round-robin when n > visible: the partition is tested on one GPU).
std::string child_device(int k, int visible) {
  std::vector<std::string> ids;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) ids = split_commas(v);
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
    const io::Json& cm = c.at("class_mismatches", src);
    for (int v = 0; v < 5; ++v) {
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
  std::vector<pid_t> pids(n);
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
      for (int v = 0; v < 5; ++v) m->class_mismatches[v] += c.class_mismatches[v];
      m->seconds = std::max(m->seconds, c.seconds);
    }
  }
  std::system((std::string("rm -rf '") + dir + "'").c_str());
  if (!failure.empty()) throw InputError("--gpus:" + failure);
  return merged;
}

int run_verify_cuda(const Args& args) {
  gpu::CampaignOptions o;
  std::string campaign = "all", out_path;
  bool json = false, full = true, have_first = false, have_count = false;
  Shard shard{};
  int gpus = 1;
  Args child_args;  // the arguments without --gpus, for the children
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--campaign") {
      campaign = option_value(args, i);
      if (campaign != "all" && campaign != "casts" && campaign != "hw") {
        throw InputError("--campaign '" + campaign +
                         "': with --device cuda expected all, casts "
                         "or hw");
      }
    } else if (a == "--depth") {
      const std::string& d = option_value(args, i);
      if (d != "full" && d != "ci") throw InputError("--depth '" + d + "': expected full or ci");
      full = d == "full";
    } else if (a == "--threads") {
      o.cpu_threads = static_cast<int>(parse_uint(option_value(args, i), "--threads", 4096));
    } else if (a == "--formats") {
      for (const auto& name : split_commas(option_value(args, i))) {
        const auto f = parse_float_format(name);
        if (!f || f->total_bits() > 16) {
          throw InputError("--formats: '" + name + "' is not a float format of <= 16 bits");
        }
        o.formats.push_back(*f);
      }
    } else if (a == "--modes") {
      for (const auto& m : split_commas(option_value(args, i)))
        o.roundings.push_back(parse_rounding(m));
    } else if (a == "--seed") {
      o.seed = parse_uint(option_value(args, i), "--seed", ~std::uint64_t{0});
    } else if (a == "--path") {
      const std::string& p = option_value(args, i);
      if (p == "auto") {
        o.path = gpu::CastPath::automatic;
      } else if (p == "generic") {
        o.path = gpu::CastPath::generic;
      } else if (p == "fast") {
        o.path = gpu::CastPath::fast;
      } else {
        throw InputError("--path '" + p + "': expected auto, generic or fast");
      }
    } else if (a == "--first") {
      o.first = parse_uint(option_value(args, i), "--first", 0xFFFFFFFFull);
      have_first = true;
    } else if (a == "--count") {
      o.count = parse_uint(option_value(args, i), "--count", std::uint64_t{1} << 32);
      have_count = true;
    } else if (a == "--out") {
      out_path = option_value(args, i);
    } else if (a == "--shard") {
      shard = parse_shard(option_value(args, i));
    } else if (a == "--gpus") {
      const std::string& g = option_value(args, i);
      gpus = g == "all" ? -1 : static_cast<int>(parse_uint(g, "--gpus", 1024));
      if (gpus == 0) throw InputError("--gpus: expected all or a count >= 1");
      continue;  // not forwarded
    } else if (a == "--json") {
      json = true;
    } else if (a == "--quiet") {
      o.progress = false;
    } else {
      throw InputError("unknown argument '" + a +
                       "' (expected --campaign, --depth, --threads, --formats, --modes, --seed, "
                       "--path, --first, --count, --shard, --gpus, --out, --json, --quiet)");
    }
  }
  // The children of --gpus get every option but --gpus, --shard, --out, --json and --quiet.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--gpus" || a == "--shard" || a == "--out") {
      ++i;
    } else if (a != "--json" && a != "--quiet") {
      child_args.push_back(a);
    }
  }
  if (!full && !have_first && !have_count) {
    o.count = std::uint64_t{1} << 26;
    o.first = 0x7F800000u + (std::uint64_t{1} << 23) - o.count;  // up to the last NaN code
  }
  if (o.count == 0 || o.first + o.count > (std::uint64_t{1} << 32)) {
    throw InputError("--first/--count: expected a range inside [0, 2^32)");
  }
  if (gpu::device_count() == 0) {
    throw InputError("--device cuda: no CUDA device found");
  }
  const int visible = gpu::device_count();
  if (gpus == -1) gpus = visible;
  if (gpus > 1 && !shard.whole()) throw InputError("--gpus with --shard: choose one");
  // --shard i/N: slice i of the input range (13.4), so N runs on N machines add up.
  const std::uint64_t b = shard.begin(o.count), e = shard.end(o.count);
  o.first += b;
  o.count = e - b;
  if (o.count == 0) throw InputError("--shard " + shard.text() + ": an empty slice of the inputs");
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
