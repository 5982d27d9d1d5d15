// The state directory of an optimizer run (sim/optim/state_file.hpp).
#include "sim/optim/state_file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <variant>

#include "sim/common/error.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/registry.hpp"

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

const char* storage_text(Storage st) {
  return st == Storage::bf16 ? "bf16" : st == Storage::f16 ? "fp16" : "fp32";
}

// Values no step can produce are refused, so that a tampered or foreign state is not stepped on
// as if exmy had written it: block absmax arrays and Adam's second moment are sums of squares or
// magnitudes, never negative (NaN is kept: a diverged run writes it).
void check_loaded_state(const Config& c, const std::string& dir, State& s) {
  const Entry& e = *c.opt.entry;
  for (const StateArray& a : e.arrays(c, s)) {
    const std::string file = a.file;
    // The family names its own (second moments, sums of squares).
    const bool nonneg = file == "absmax1" || file == "absmax2" ||
                        (e.def->nonnegative != nullptr && e.def->nonnegative(e, file));
    auto* const* v = std::get_if<std::vector<float>*>(&a.data);
    if (!nonneg || v == nullptr) continue;
    const std::vector<float>& x = **v;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::signbit(x[i]) && !std::isnan(x[i]) && x[i] != 0.0f) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x[i]));
        throw InputError(dir + "/" + file + ".npy: element " + std::to_string(i) + " is " + buf +
                         (file == "state2" ? " (exp_avg_sq)" : "") +
                         ", expected >= 0 (no step writes a negative value there)");
      }
    }
  }
}

}  // namespace

std::string state_json(const Config& c, const RunRecord& r) {
  const Entry& e = *c.opt.entry;
  std::string rms, skipped;
  for (const float v : r.rms) rms += (rms.empty() ? "" : ",") + json_float(v);
  for (const long k : r.skipped) skipped += (skipped.empty() ? "" : ",") + std::to_string(k);
  // Counts: the totals, of which the lists hold the first RunRecord::kHistory.
  const std::uint64_t rms_count = std::max<std::uint64_t>(r.rms_count, r.rms.size());
  const std::uint64_t skipped_count = std::max<std::uint64_t>(r.skipped_count, r.skipped.size());
  return "{\"optimizer\":" + io::json_string(r.optimizer) + ",\"n\":" + std::to_string(r.n) +
         ",\"step\":" + std::to_string(r.step) + ",\"block\":" + std::to_string(r.block) +
         ",\"is_8bit\":" + (r.is_8bit ? "true" : "false") +
         ",\"split_format\":" + io::json_string(e.split ? split_format_name(c.opt.split) : "") +
         ",\"seed\":" + std::to_string(r.seed) + ",\"scale\":" + json_float(r.scaler.scale) +
         ",\"growth_tracker\":" + std::to_string(r.scaler.growth_tracker) +
         ",\"variant\":" + io::json_string(r.variant) +
         ",\"compat\":" + io::json_string(r.compat.empty() ? "default" : r.compat) +
         ",\"param_dtype\":" + io::json_string(storage_text(c.st)) +
         ",\"rms_count\":" + std::to_string(rms_count) + ",\"rms\":[" + rms +
         "],\"skipped_count\":" + std::to_string(skipped_count) + ",\"skipped\":[" + skipped +
         "]}\n";
}

Resume resume_state_dir(const Config& c, std::string_view name, const std::string& dir,
                        std::span<const float> p, const std::string& params_path,
                        const std::vector<std::size_t>& shape, State& s,
                        const ResumeRequest& want) {
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
  // The step count continues from here; a run that would pass kMaxStepCount is refused now, so
  // that every state.json exmy writes is one it reads.
  r.step = static_cast<long>(js.i64("step", 0, kMaxStepCount));
  if (want.steps > kMaxStepCount - r.step) {
    throw InputError(sf + ": step " + std::to_string(r.step) + " + --steps " +
                     std::to_string(want.steps) + " would pass the step counter's limit " +
                     std::to_string(kMaxStepCount));
  }
  r.scaler.scale = js.f32("scale");
  // 0 is what a dynamic scale reaches after enough halvings (as PyTorch's GradScaler, which has
  // no floor): a state exmy writes, so one it reads.
  if (!(r.scaler.scale >= 0.0f) || std::isinf(r.scaler.scale)) {
    throw InputError(sf + ": \"scale\" is " + js.value("scale").text +
                     ", expected a finite loss scale >= 0");
  }
  // The settings that make the continued run the same computation (docs/SEMANTICS.md 11.5).
  const std::string want_compat = want.compat.empty() ? "default" : want.compat;
  if (js.has("variant") && js.str("variant") != c.variant) {
    throw InputError(sf + ": recorded --variant " + js.str("variant") + ", this run asks for " +
                     c.variant + " (expected the same variant to continue a run)");
  }
  if (js.has("compat") && js.str("compat") != want_compat) {
    throw InputError(sf + ": recorded --compat " + js.str("compat") + ", this run asks for " +
                     want_compat + " (expected the same profile to continue a run)");
  }
  if (js.has("param_dtype") && js.str("param_dtype") != storage_text(c.st)) {
    throw InputError(sf + ": recorded --param-dtype " + js.str("param_dtype") +
                     ", this run's parameters are " + storage_text(c.st) +
                     " (expected the same storage to continue a run: --param-dtype " +
                     js.str("param_dtype") + ")");
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
  check_loaded_state(c, dir, s);
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
