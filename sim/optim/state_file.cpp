// The state directory of an optimizer run (sim/optim/state_file.hpp).
#include "sim/optim/state_file.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"

namespace exmy::optim {
namespace {

// A shortest round-trip decimal of a float, or null where JSON has no number (a NaN or inf rms
// of a diverged run).
std::string json_float(float v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

std::string state_json(const Config& c, const RunRecord& r) {
  const Entry& e = *c.opt.entry;
  std::string rms, skipped;
  for (const float v : r.rms) rms += (rms.empty() ? "" : ",") + json_float(v);
  for (const long k : r.skipped) skipped += (skipped.empty() ? "" : ",") + std::to_string(k);
  return "{\"optimizer\":" + io::json_string(r.optimizer) + ",\"n\":" + std::to_string(r.n) +
         ",\"step\":" + std::to_string(r.step) + ",\"block\":" + std::to_string(r.block) +
         ",\"is_8bit\":" + (r.is_8bit ? "true" : "false") +
         ",\"split_format\":" + io::json_string(e.split ? split_format_name(c.opt.split) : "") +
         ",\"seed\":" + std::to_string(r.seed) + ",\"scale\":" + json_float(r.scaler.scale) +
         ",\"growth_tracker\":" + std::to_string(r.scaler.growth_tracker) +
         ",\"variant\":" + io::json_string(r.variant) +
         ",\"compat\":" + io::json_string(r.compat.empty() ? "default" : r.compat) + ",\"rms\":[" +
         rms + "],\"skipped\":[" + skipped + "]}\n";
}

Resume resume_state_dir(const Config& c, std::string_view name, const std::string& dir,
                        std::span<const float> p, const std::string& params_path,
                        const std::vector<std::size_t>& shape, State& s) {
  const Entry& e = *c.opt.entry;
  const std::string sf = dir + "/state.json";
  struct stat sd {};
  if (stat(dir.c_str(), &sd) != 0 || !S_ISDIR(sd.st_mode)) {
    throw InputError("--state '" + dir +
                     "': not a directory (expected the --out directory of an earlier exmy step)");
  }
  const io::FlatJson js(io::read_small_file(sf, 1u << 26, "the state.json of exmy step"), sf);
  if (js.str("optimizer") != name) {
    throw InputError(sf + ": state of optimizer '" + js.str("optimizer") + "', not '" +
                     std::string(name) + "'");
  }
  const std::uint64_t sn = js.u64("n", UINT64_MAX);
  if (sn != p.size()) {
    throw InputError(sf + ": state for " + std::to_string(sn) + " elements, params have " +
                     std::to_string(p.size()));
  }
  Resume r;
  // The step count continues from here: at most what --steps can add keeps it in a long.
  r.step = static_cast<long>(js.i64("step", 0, INT64_MAX / 2));
  r.scaler.scale = js.f32("scale");
  if (!(r.scaler.scale > 0.0f)) {
    throw InputError(sf + ": \"scale\" is " + js.value("scale").text +
                     ", expected a loss scale > 0");
  }
  r.scaler.growth_tracker = static_cast<int>(js.i64("growth_tracker", 0, INT32_MAX));
  if (is_blockwise(e) &&
      (js.i64("block", 1, INT32_MAX) != c.block || js.boolean("is_8bit") != s.bnb.is_8bit)) {
    throw InputError(sf + ": block size or 8-bit/32-bit layout differs from the options");
  }
  if (e.split && js.str("split_format") != split_format_name(c.opt.split)) {
    throw InputError(sf + ": split format differs from --optimizer");
  }
  load_state(c, dir, p, params_path, shape, s);
  return r;
}

void write_state_dir(const std::string& out, const Config& c, const std::vector<std::size_t>& shape,
                     std::span<const float> p, State& s, const std::string& json) {
  mkdir(out.c_str(), 0777);
  struct stat sb {};
  if (stat(out.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    throw InputError("--out '" + out + "': cannot create the directory");
  }
  const io::StagingDir stage(out);
  io::OutputSet outs;
  {
    io::NpyFileWriter w(stage.path() + "/params.npy", io::kDescrF32, shape);
    w.write(p.data(), p.size() * sizeof(float));
    w.commit();
  }
  outs.adopt(stage.path() + "/params.npy", out + "/params.npy");
  save_state(c, stage.path(), shape, s);
  for (const StateArray& a : c.opt.entry->arrays(c, s)) {
    const std::string f = std::string("/") + a.file + ".npy";
    outs.adopt(stage.path() + f, out + f);
  }
  io::write_text_atomic(stage.path() + "/state.json", json);
  outs.adopt(stage.path() + "/state.json", out + "/state.json");
  outs.commit();
}

}  // namespace exmy::optim
