// exmy probe sfu --device cuda --out DIR
// Measures the GPU's approximate fp32 instructions (rcp, sqrt, rsqrt, ex2, lg2 .approx.ftz) into
// the residual tables of sim/sfu/sfu_tables.hpp, checks the models of sim/native/sfu_sm90.hpp
// against the instructions on all 2^32 inputs each, and writes DIR/sfu-tables.bin (the bundle,
// manifest inside) and DIR/sfu-tables.json (the manifest) together — only when every model
// matches (docs/SEMANTICS.md 17). Copy both to golden/profiles/sm90/ to recompile them in.
#include "cli/probe_sfu.hpp"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_util.hpp"
#include "cli/options.hpp"
#include "gpu/common/runtime.hpp"
#include "gpu/sfu/sfu_probe.hpp"
#include "sim/common/error.hpp"
#include "sim/io/build_info.hpp"
#include "sim/io/files.hpp"

namespace exmy::cli {
namespace {

// What `exmy probe sfu` was asked for.
struct SfuProbe {
  std::string out;  // --device is checked, not kept: cuda is its only value
};

Options sfu_options(SfuProbe& p) {
  Options opts("exmy probe sfu --device cuda --out DIR",
               "Measures rcp/sqrt/rsqrt/ex2/lg2 .approx.ftz.f32 on this GPU into "
               "DIR/sfu-tables.bin and DIR/sfu-tables.json, after checking exmy's models against "
               "every one of the 2^32 inputs (docs/SEMANTICS.md 17); nothing is written unless "
               "every model matches (exit 1).",
               "exmy probe sfu --device cuda --out sfu-profile");
  opts.value({"--device"}, "cuda", "the GPU to measure (only cuda)", Options::kRequired,
             [&](const std::string& v) {
               if (v != "cuda") throw InputError("--device '" + v + "': expected cuda");
             })
      .value({"--out"}, "DIR", "the directory to write the tables into (created if missing)",
             Options::kRequired, [&](const std::string& v) {
               if (v.empty()) throw InputError("--out '': expected the directory to write into");
               p.out = v;
             });
  return opts;
}

std::string driver_line() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (f && std::getline(f, line)) return line;
  return "unknown (no /proc/driver/nvidia/version)";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08" PRIx32, v);
  return b;
}

}  // namespace

std::string probe_sfu_usage() {
  SfuProbe unused;
  return sfu_options(unused).usage();
}

int run_probe_sfu(const Args& args) {
  SfuProbe p;
  if (!sfu_options(p).parse(args)) return 0;
  const std::string& out = p.out;
  if (gpu::device_count() == 0) {
    throw InputError("--device cuda: no usable GPU (" + gpu::device_name() + ")");
  }
  // Before the measurement (tens of seconds of GPU time): a missing DIR is created, a file in
  // the way or a read-only one refused, so that no run ends in "cannot write" after its work.
  io::ensure_output_directory(out, "--out");
  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "exmy probe sfu: measuring the tables on %s\n", gpu::device_name().c_str());
  sfu::Bundle b;
  gpu::sfu_measure(b);
  std::int64_t last = 0;
  const auto progress = [&](int done, int total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (static_cast<std::int64_t>(s) == last && done != total) return;
    last = static_cast<std::int64_t>(s);
    std::fprintf(stderr, "exmy probe sfu: verify %d/%d chunks of 2^28 inputs, %.0f s, ETA %.0f s\n",
                 done, total, s, s / done * (total - done));
  };
  std::vector<gpu::SfuCheck> checks = gpu::sfu_verify(b, progress);
  // CUDA's powf (built on MUFU.RCP) against its transcription (docs/SEMANTICS.md 17.4).
  for (gpu::SfuCheck& c : gpu::sfu_verify_powf(progress)) checks.push_back(std::move(c));
  // The non-FTZ and division forms (docs/SEMANTICS.md 17.2).
  for (gpu::SfuCheck& c : gpu::sfu_verify_composites(progress)) checks.push_back(std::move(c));
  bool all_ok = true;
  std::ostringstream inst;
  for (std::size_t k = 0; k < checks.size(); ++k) {
    const auto& c = checks[k];
    all_ok = all_ok && c.mismatches == 0;
    std::printf("%-22s %" PRIu64 " inputs, %" PRIu64 " mismatches, digest %016" PRIx64 "\n",
                c.instruction.c_str(), c.inputs, c.mismatches, c.digest);
    for (std::size_t e = 0; e + 2 < c.examples.size(); e += 3) {
      std::printf("    x=%s hardware=%s model=%s\n", hex32(c.examples[e]).c_str(),
                  hex32(c.examples[e + 1]).c_str(), hex32(c.examples[e + 2]).c_str());
    }
    char dig[24];
    std::snprintf(dig, sizeof dig, "%016" PRIx64, c.digest);
    inst << (k ? "," : "") << "\n  {\"instruction\":" << json_string(c.instruction)
         << ",\"inputs\":" << c.inputs << ",\"mismatches\":" << c.mismatches << ",\"digest\":\""
         << dig << "\"}";
  }
  if (!all_ok) {
    std::fprintf(stderr, "exmy probe sfu: a model does not match the hardware; nothing written\n");
    return 1;
  }
  std::ostringstream tabs;
  for (int k = 0; k < sfu::kTables; ++k) {
    const auto& info = sfu::table_info(static_cast<sfu::Table>(k));
    tabs << (k ? "," : "") << "\n  {\"name\":" << json_string(info.name)
         << ",\"entries\":" << info.entries << ",\"domain\":" << json_string(info.domain) << "}";
  }
  b.manifest = "{\"format\":\"exmy SFU tables 1\",\"device\":" + json_string(gpu::device_name()) +
               ",\n \"driver\":" + json_string(driver_line()) +
               ",\n \"date\":" + json_string(utc_now()) +
               ",\n \"exmy\":" + json_string(exmy::build_git_sha()) +
               ",\n \"command\":\"exmy probe sfu --device cuda --out DIR\",\n \"verified\":[" +
               inst.str() + "],\n \"tables\":[" + tabs.str() + "]}\n";
  const std::vector<std::uint8_t> bytes = sfu::encode(b);
  // The bundle must decode to exactly what was measured.
  const sfu::Bundle back = sfu::decode(bytes, "the encoded bundle");
  for (int k = 0; k < sfu::kTables; ++k) {
    if (back.tables[k] != b.tables[k])
      throw InputError("exmy probe sfu: encoding round trip failed");
  }
  io::OutputSet outs;
  const std::string bin = outs.stage(out + "/sfu-tables.bin");
  {
    std::ofstream f(bin, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    f.close();  // a full disk shows at the flush of close, not before
    if (!f) throw InputError("cannot write " + bin);
  }
  const std::string js = outs.stage(out + "/sfu-tables.json");
  {
    std::ofstream f(js);
    f << b.manifest;
    f.close();
    if (!f) throw InputError("cannot write " + js);
  }
  outs.commit();
  std::printf("wrote %s/sfu-tables.bin (%zu bytes) and %s/sfu-tables.json\n", out.c_str(),
              bytes.size(), out.c_str());
  return 0;
}

}  // namespace exmy::cli
