// exmy step --optimizer NAME --params P.npy --grads G.npy [--state DIR] --steps N --out DIR
//           [--lr X --beta1 X --beta2 X --eps X --wd X --momentum X --dampening X --nesterov]
//           [--block 256|2048] [--no-small-fallback] [--variant default|torch-fused|torch-order]
//           [--param-dtype fp32|bf16|fp16] [--seed S] [--loss-scale none|dynamic|fixed:S]
//           [--device cpu|cuda]
// Runs N optimizer steps on one tensor (docs/SEMANTICS.md 9, 11.5). NAME is an entry of the
// optimizer registry (sim/optim/registry.hpp), which also gives its defaults, its state files and
// its CPU step; --device cuda runs the GPU kernels of gpu/optim/optim.hpp (optim_host.hpp), states
// staying on the device between steps, and writes the same bytes. G.npy has P's shape (the same
// gradient every step) or [N, *shape] (one per step). The state is saved in DIR as .npy files and
// state.json (written last), and reloads without loss with --state DIR.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/optim.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::cli {
namespace {

using optim::Storage;

struct Options {
  std::string optimizer, params, grads, state, out;
  long steps = 1;
  optim::HyperOptions hyper;
  int block = 256;
  bool small_fallback = true;
  std::string variant = "default";
  std::string compat;  // --compat NAME, "" = the optimizer's default (torch-cpu for adam/adamw/sgd)
  Storage st = Storage::f32;
  std::uint64_t seed = 0;
  std::string loss_scale = "none";
  Device device = Device::cpu;
};

constexpr const char* kUsage =
    "usage: exmy step --optimizer NAME --params P.npy --grads G.npy [--state DIR] --steps N --out "
    "DIR [--lr X --beta1 X --beta2 X --eps X --wd X --momentum X --dampening X --nesterov] "
    "[--block 256|2048] [--no-small-fallback] [--variant default|torch-fused|torch-order] "
    "[--compat torch-cpu|torch-cuda|torch-cuda-foreach|bnb-cuda] [--param-dtype fp32|bf16|fp16] [--seed S] [--loss-scale none|dynamic|fixed:S] "
    "[--device cpu|cuda]";

Options parse(const Args& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    } else if (a == "--optimizer") {
      o.optimizer = option_value(args, i);
    } else if (a == "--params") {
      o.params = option_value(args, i);
    } else if (a == "--grads") {
      o.grads = option_value(args, i);
    } else if (a == "--state") {
      o.state = option_value(args, i);
    } else if (a == "--out") {
      o.out = option_value(args, i);
    } else if (a == "--steps") {
      o.steps = static_cast<long>(parse_uint(option_value(args, i), "--steps", 1u << 30));
    } else if (a == "--lr") {
      o.hyper.lr = number::parse_f64(option_value(args, i), "--lr");
    } else if (a == "--beta1") {
      o.hyper.beta1 = number::parse_f64(option_value(args, i), "--beta1");
    } else if (a == "--beta2") {
      o.hyper.beta2 = number::parse_f64(option_value(args, i), "--beta2");
    } else if (a == "--eps") {
      o.hyper.eps = number::parse_f64(option_value(args, i), "--eps");
    } else if (a == "--wd") {
      o.hyper.wd = number::parse_f64(option_value(args, i), "--wd");
    } else if (a == "--momentum") {
      o.hyper.momentum = number::parse_f64(option_value(args, i), "--momentum");
    } else if (a == "--dampening") {
      o.hyper.dampening = number::parse_f64(option_value(args, i), "--dampening");
    } else if (a == "--nesterov") {
      o.hyper.nesterov = true;
    } else if (a == "--block") {
      o.block = static_cast<int>(parse_uint(option_value(args, i), "--block", 1u << 20));
    } else if (a == "--no-small-fallback") {
      o.small_fallback = false;
    } else if (a == "--variant") {
      o.variant = option_value(args, i);
    } else if (a == "--compat") {
      o.compat = option_value(args, i);
    } else if (a == "--param-dtype") {
      const std::string& v = option_value(args, i);
      if (v == "fp32") {
        o.st = Storage::f32;
      } else if (v == "bf16") {
        o.st = Storage::bf16;
      } else if (v == "fp16") {
        o.st = Storage::f16;
      } else {
        throw InputError("--param-dtype '" + v + "': expected fp32, bf16 or fp16");
      }
    } else if (a == "--seed") {
      o.seed = parse_uint(option_value(args, i), "--seed", ~std::uint64_t{0});
    } else if (a == "--loss-scale") {
      o.loss_scale = option_value(args, i);
    } else if (a == "--device") {
      o.device = parse_device(option_value(args, i));
    } else {
      throw InputError("unknown option '" + a + "' (" + kUsage + ")");
    }
  }
  if (o.optimizer.empty()) {
    throw InputError("--optimizer is required (one of: " + optim::optimizer_names() + ")");
  }
  if (o.params.empty()) throw InputError("--params is required");
  if (o.grads.empty()) throw InputError("--grads is required");
  if (o.out.empty()) throw InputError("--out is required");
  return o;
}

// The hyperparameter domains PyTorch's constructors enforce (torch.optim.Adam / AdamW / SGD:
// "Invalid learning rate", "Invalid beta parameter at index 0", ...; bitsandbytes and optimi
// check the same ones): a value outside is refused by name rather than run (docs/SEMANTICS.md
// 9.9). Only the hyperparameters the optimizer's family reads are checked.
void check_hyper_domains(const optim::Entry& e, const optim::Hyper& h) {
  using optim::Family;
  const auto check = [](double v, const char* what, double lo, double hi, bool hi_open) {
    // The shortest decimal that reads back as v: the text the user typed, for typed values.
    char text[40];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(text, sizeof text, "%.*g", digits, v);
      if (std::strtod(text, nullptr) == v) break;
    }
    number::require_range(v, text, what, lo, false, hi, hi_open);
  };
  const double inf = HUGE_VAL;
  switch (e.family) {
    case Family::sgd:
    case Family::split_sgd:
      check(h.sgd.lr, "--lr", 0.0, inf, true);
      check(h.sgd.momentum, "--momentum", 0.0, inf, true);
      check(h.sgd.wd, "--wd", 0.0, inf, true);
      if (h.sgd.nesterov && (h.sgd.momentum <= 0.0 || h.sgd.dampening != 0.0)) {
        throw InputError("--nesterov: expected --momentum > 0 and --dampening 0 (PyTorch's rule)");
      }
      return;
    case Family::momentum8:
      check(h.adam.lr, "--lr", 0.0, inf, true);
      check(h.adam.beta1, "--momentum / --beta1", 0.0, 1.0, true);
      check(h.adam.wd, "--wd", 0.0, inf, true);
      return;
    case Family::adam:
    case Family::adam8:
    case Family::stable:
    case Family::split_adam:
      check(h.adam.lr, "--lr", 0.0, inf, true);
      check(h.adam.eps, "--eps", 0.0, inf, true);
      check(h.adam.beta1, "--beta1", 0.0, 1.0, true);
      check(h.adam.beta2, "--beta2", 0.0, 1.0, true);
      check(h.adam.wd, "--wd", 0.0, inf, true);
      return;
  }
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string t = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) t += (k ? ", " : "") + std::to_string(shape[k]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

// A shortest round-trip decimal of a float for state.json, or null where JSON has no number
// (a NaN or inf rms of a diverged run).
std::string json_float(float v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// Progress of a long run on stderr: steps done, rate and the time left, at most once a second
// and only after the first two seconds (short runs print nothing). EXMY_PROGRESS_SECONDS=S sets
// both delays to S seconds (tests use 0: a line per step).
class Progress {
 public:
  explicit Progress(long total) : total_(total), start_(Clock::now()), last_(start_) {
    if (const char* e = std::getenv("EXMY_PROGRESS_SECONDS")) {
      const double s = number::parse_f64(e, "EXMY_PROGRESS_SECONDS");
      number::require_range(s, e, "EXMY_PROGRESS_SECONDS", 0.0, false, 1e6, false);
      first_ = every_ = std::chrono::duration<double>(s);
    }
  }
  void update(long done) {
    const auto now = Clock::now();
    if (done == 0 || now - last_ < every_ || now - start_ < first_) return;
    last_ = now;
    printed_ = true;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = done / secs;
    const double left = rate > 0 ? (total_ - done) / rate : 0.0;
    std::fprintf(stderr, "exmy step: %ld/%ld steps (%.1f%%), %.3g steps/s, ETA %s\n", done, total_,
                 100.0 * done / total_, rate, duration(left).c_str());
  }
  void finish(long done) {
    if (!printed_) return;
    const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "exmy step: %ld/%ld steps in %s\n", done, total_, duration(secs).c_str());
  }

 private:
  using Clock = std::chrono::steady_clock;
  static std::string duration(double s) {
    char buf[64];
    const auto t = static_cast<long long>(s + 0.5);
    if (t >= 3600) {
      std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", t / 3600, t / 60 % 60, t % 60);
    } else if (t >= 60) {
      std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%llds", t);
    }
    return buf;
  }
  long total_;
  Clock::time_point start_, last_;
  std::chrono::duration<double> first_{2.0}, every_{1.0};
  bool printed_ = false;
};

int run_step(const Args& args) {
  const Options o = parse(args);
  optim::Config c;
  c.opt = optim::find_optimizer(o.optimizer);
  const optim::Entry& e = *c.opt.entry;
  c.hyper = optim::resolve_hyper(e, o.hyper);
  check_hyper_domains(e, c.hyper);
  c.st = o.st;
  c.block = o.block;
  c.small_fallback = o.small_fallback;
  c.variant = o.variant;
  c.seed = o.seed;
  if (!o.compat.empty()) {
    // The profile's PyTorch kernels (docs/SEMANTICS.md 9.2, 9.3, 12); a profile that does not
    // cover this optimizer is an error, never a fallback to the default.
    const CompatEntry& ce = compat_step_entry(compat_profile(o.compat), std::string(e.name));
    if ((ce.kernels != native::TorchKernels::cpu || ce.bnb != native::BnbKernels::exact) &&
        o.variant != "default") {
      throw InputError("--compat " + o.compat + " with --variant " + o.variant +
                       ": choose one (the variant is a model of other kernels)");
    }
    c.hyper.adam.kernels = c.hyper.sgd.kernels = ce.kernels;
    c.hyper.adam.bnb = ce.bnb;
  }

  // Parameters and gradients.
  io::NpyArray pa = io::read_npy(o.params);
  // Element order is C order everywhere: a Fortran-order file would be stepped element by element
  // and written back transposed.
  io::require_c_order(pa, o.params);
  std::vector<float> p;
  if (pa.descr == io::kDescrF16) {
    const auto u = io::as_u16(io::NpyArray{io::kDescrU16, pa.shape, false, pa.data}, o.params);
    p.resize(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) p[i] = native::f32_from_f16(u[i]);
    c.st = Storage::f16;
  } else {
    p = io::as_f32(pa, o.params);
  }
  // p holds the values now: keep only the header (memory bound, docs/SEMANTICS.md 11.0).
  std::vector<std::uint8_t>().swap(pa.data);
  optim::check_variant(c);
  if (o.device == Device::cuda) {
    optim::require_gpu_kernel(c);
  }
  const std::size_t n = p.size();
  if (!e.split) {
    for (std::size_t i = 0; i < n; ++i) {
      if (native::f32_bits(native::to_storage(p[i], c.st)) != native::f32_bits(p[i]) &&
          !std::isnan(p[i])) {
        throw InputError(o.params + ": element " + std::to_string(i) +
                         " is not a value of --param-dtype (round it with exmy cast first)");
      }
    }
  }
  // The gradients are only read: a read-only mapping of the file, no copy (a step copies its
  // slice only to unscale it under --loss-scale).
  const io::NpyMappedFile gfile(o.grads);
  const io::NpyHeader& ga = gfile.header();
  io::require_c_order(ga, o.grads);
  if (ga.descr != io::kDescrF32) {
    (void)io::as_f32(io::NpyArray{ga.descr, ga.shape, false, {}}, o.grads);  // the reader's error
    throw InputError(o.grads + ": expected '<f4' gradients, got '" + ga.descr + "'");
  }
  std::vector<float> gcopy;
  std::span<const float> gall;
  if (ga.count() > 0) {
    if (reinterpret_cast<std::uintptr_t>(gfile.data()) % alignof(float) == 0) {
      gall = std::span<const float>(reinterpret_cast<const float*>(gfile.data()), ga.count());
    } else {  // a header length that leaves the data unaligned: copy
      gcopy.resize(ga.count());
      std::memcpy(gcopy.data(), gfile.data(), ga.count() * sizeof(float));
      gall = gcopy;
    }
  }
  // The gradient's shape, not only its element count: a [3, 2] gradient for [2, 3] parameters
  // would otherwise be taken element by element in another layout.
  std::vector<std::size_t> per_step_shape{static_cast<std::size_t>(o.steps)};
  per_step_shape.insert(per_step_shape.end(), pa.shape.begin(), pa.shape.end());
  // [steps, *shape] holds one gradient per step (for --steps 1 too: [1, *shape]).
  const bool per_step = ga.shape == per_step_shape;
  if (ga.shape != pa.shape && !per_step) {
    throw InputError(o.grads + ": shape " + shape_text(ga.shape) + ", expected the parameters' " +
                     shape_text(pa.shape) + " or [steps, *shape] " + shape_text(per_step_shape));
  }

  // State: fresh, or reloaded from --state, which must be a state directory written by exmy
  // step (a missing one is an error, not a fresh start that would silently lose the history).
  long t0 = 0;
  optim::DynamicScaler scaler;
  optim::State state = optim::init_state(c, p);
  if (!o.state.empty()) {
    const std::string sf = o.state + "/state.json";
    struct stat sd {};
    if (stat(o.state.c_str(), &sd) != 0 || !S_ISDIR(sd.st_mode)) {
      throw InputError("--state '" + o.state +
                       "': not a directory (expected the --out directory of an earlier exmy step)");
    }
    const io::FlatJson js(io::read_small_file(sf, 1u << 26, "the state.json of exmy step"), sf);
    if (js.str("optimizer") != o.optimizer) {
      throw InputError(sf + ": state of optimizer '" + js.str("optimizer") + "', not '" +
                       o.optimizer + "'");
    }
    const std::uint64_t sn = js.u64("n", UINT64_MAX);
    if (sn != n) {
      throw InputError(sf + ": state for " + std::to_string(sn) + " elements, params have " +
                       std::to_string(n));
    }
    // The step count continues from here: at most what --steps can add keeps it in a long.
    t0 = static_cast<long>(js.i64("step", 0, INT64_MAX / 2));
    scaler.scale = js.f32("scale");
    if (!(scaler.scale > 0.0f)) {
      throw InputError(sf + ": \"scale\" is " + js.value("scale").text +
                       ", expected a loss scale > 0");
    }
    scaler.growth_tracker = static_cast<int>(js.i64("growth_tracker", 0, INT32_MAX));
    if (optim::is_blockwise(e) &&
        (js.i64("block", 1, INT32_MAX) != o.block || js.boolean("is_8bit") != state.bnb.is_8bit)) {
      throw InputError(sf + ": block size or 8-bit/32-bit layout differs from the options");
    }
    if (e.split && js.str("split_format") != optim::split_format_name(c.opt.split)) {
      throw InputError(sf + ": split format differs from --optimizer");
    }
    optim::load_state(c, o.state, p, o.params, pa.shape, state);
  }

  // Loss scaling.
  enum class Scale { none, dynamic, fixed } scale_mode = Scale::none;
  float fixed_scale = 1.0f;
  if (o.loss_scale == "dynamic") {
    scale_mode = Scale::dynamic;
  } else if (o.loss_scale.compare(0, 6, "fixed:") == 0) {
    scale_mode = Scale::fixed;
    const std::string text = o.loss_scale.substr(6);
    fixed_scale = number::parse_f32(text, "--loss-scale fixed:S");
    number::require_range(fixed_scale, text, "--loss-scale fixed:S", 0.0, true, HUGE_VAL, true);
  } else if (o.loss_scale != "none") {
    throw InputError("--loss-scale '" + o.loss_scale + "': expected none, dynamic or fixed:S");
  }

  // The steps, on the engine of --device; gradients are unscaled on the host either way.
  const std::unique_ptr<optim::Stepper> engine =
      o.device == Device::cuda ? gpu::optim_stepper(c, p, state) : optim::cpu_stepper(c, p, state);
  long t = t0;
  std::string rms_list, skipped_list;
  Progress progress(o.steps);
  for (long k = 0; k < o.steps; ++k) {
    progress.update(k);
    std::span<const float> gk = gall.subspan(per_step ? static_cast<std::size_t>(k) * n : 0, n);
    std::vector<float> g;  // a copy only where the loss scale must be taken out
    if (scale_mode != Scale::none) {
      g.assign(gk.begin(), gk.end());
      gk = g;
    }
    if (scale_mode == Scale::dynamic) {
      const bool inf = optim::unscale_and_check(g, scaler.scale);
      optim::update_scale(scaler, inf);
      if (inf) {
        skipped_list += (skipped_list.empty() ? "" : ",") + std::to_string(k);
        continue;
      }
    } else if (scale_mode == Scale::fixed) {
      const bool inf = optim::unscale_and_check(g, fixed_scale);
      if (inf) {
        skipped_list += (skipped_list.empty() ? "" : ",") + std::to_string(k);
        continue;
      }
    }
    ++t;
    const float rms = engine->step(t, gk);
    if (e.reports_rms) rms_list += (rms_list.empty() ? "" : ",") + json_float(rms);
  }
  engine->finish();
  progress.finish(o.steps);
  optim::final_params(c, state, p);
  optim::canonical_nans(c, state, p);

  // Output: every file written into a staging directory inside --out, then renamed into place
  // together, state.json last (io::OutputSet): a failure on any file leaves the previous
  // contents of --out as they were, and a state.json is never newer than its arrays.
  mkdir(o.out.c_str(), 0777);
  struct stat sb {};
  if (stat(o.out.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    throw InputError("--out '" + o.out + "': cannot create the directory");
  }
  const io::StagingDir stage(o.out);
  io::OutputSet outs;
  {
    io::NpyFileWriter w(stage.path() + "/params.npy", io::kDescrF32, pa.shape);
    w.write(p.data(), p.size() * sizeof(float));
    w.commit();
  }
  outs.adopt(stage.path() + "/params.npy", o.out + "/params.npy");
  optim::save_state(c, stage.path(), pa.shape, state);
  for (const optim::StateArray& a : e.arrays(c, state)) {
    const std::string f = std::string("/") + a.file + ".npy";
    outs.adopt(stage.path() + f, o.out + f);
  }
  const std::string json =
      "{\"optimizer\":" + json_string(o.optimizer) + ",\"n\":" + std::to_string(n) +
      ",\"step\":" + std::to_string(t) + ",\"block\":" + std::to_string(o.block) +
      ",\"is_8bit\":" + (state.bnb.is_8bit ? "true" : "false") +
      ",\"split_format\":" + json_string(e.split ? optim::split_format_name(c.opt.split) : "") +
      ",\"seed\":" + std::to_string(o.seed) + ",\"scale\":" + json_float(scaler.scale) +
      ",\"growth_tracker\":" + std::to_string(scaler.growth_tracker) +
      ",\"variant\":" + json_string(o.variant) +
      ",\"compat\":" + json_string(o.compat.empty() ? "default" : o.compat) + ",\"rms\":[" + rms_list + "],\"skipped\":[" +
      skipped_list + "]}\n";
  io::write_text_atomic(stage.path() + "/state.json", json);
  outs.adopt(stage.path() + "/state.json", o.out + "/state.json");
  outs.commit();
  std::printf("%s", json.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("step", run_step,
             "optimizer steps (AdamW, SGD, 8-bit, StableAdamW, 16-bit + extra bits) on .npy");

}  // namespace exmy::cli
