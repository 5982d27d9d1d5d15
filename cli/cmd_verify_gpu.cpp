// exmy verify --device cuda (the hidden command "verify-cuda" that cli/cmd_verify.cpp forwards
// to): the exhaustive GPU cast campaign of gpu/verify/verify.hpp.
//   exmy verify --device cuda [--campaign all|casts|hw] [--depth full|ci] [--threads N]
//        [--formats a,b,...] [--modes rne,rtz,sr:8,...] [--seed N] [--path auto|generic|fast]
//        [--first N --count N] [--out FILE.md] [--json] [--quiet]
// --depth full sweeps all 2^32 fp32 inputs; ci the 2^26 inputs below and through the top binade
// (large normals, inf, NaN). Exit status: 0 when the software casts agree with the CPU engine
// everywhere (hardware differences are findings, printed but not failures), 1 otherwise,
// 2 bad arguments. cli/cmd_verify.cpp forwards every argument but --device here.
// --threads, --depth, --json, --quiet); the others need `exmy verify-cuda` directly.
#if EXMY_HAVE_CUDA
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/verify/verify.hpp"
#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"

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

int run_verify_cuda(const Args& args) {
  gpu::CampaignOptions o;
  std::string campaign = "all", out_path;
  bool json = false, full = true, have_first = false, have_count = false;
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
    } else if (a == "--json") {
      json = true;
    } else if (a == "--quiet") {
      o.progress = false;
    } else {
      throw InputError("unknown argument '" + a +
                       "' (expected --campaign, --depth, --threads, --formats, --modes, --seed, "
                       "--path, --first, --count, --out, --json, --quiet)");
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
  o.software = campaign != "hw";
  o.hardware = campaign != "casts";
  // Formats of 9..16 bits are not exhaustively swept by default but may be asked for.
  const auto cases = gpu::run_cast_campaign(o);
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
