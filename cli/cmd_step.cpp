// exmy step: N optimizer steps on one tensor (docs/SEMANTICS.md 9, 11.5). NAME is an entry of
// the optimizer registry (sim/optim/registry.hpp), which also gives its defaults, its state files
// and its CPU step; --device cuda runs the GPU kernels of gpu/optim/optim.hpp (optim_host.hpp),
// states staying on the device between steps, and writes the same bytes. G.npy has P's shape (the
// same gradient every step) or [N, *shape] (one per step). The state is saved in DIR as .npy files
// and state.json (written last), and reloads without loss with --state DIR.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/hyper_applies.hpp"
#include "sim/optim/optim.hpp"
#include "sim/optim/registry.hpp"
#include "sim/optim/state_file.hpp"

namespace exmy::cli {
namespace {

using optim::Storage;

// The command line of exmy step, as given; the numbers' defaults are the run's (optim::Config).
struct StepArgs {
  std::string optimizer, params, grads, state, out;
  long steps = 1;
  optim::HyperOptions hyper;
  int block = optim::Config{}.block;
  bool small_fallback = optim::Config{}.small_fallback;
  std::string variant = optim::Config{}.variant;
  std::string compat;  // --compat NAME, "" = the optimizer's default (torch-cpu for adam/adamw/sgd)
  Storage st = optim::Config{}.st;
  std::uint64_t seed = optim::Config{}.seed;
  std::string loss_scale = "none";
  Device device = Device::cpu;
  bool quiet = false;  // no progress on stderr
};

// "default" and every named variant of the registry, for --help.
std::string variant_names() {
  std::string out = "default";
  for (const optim::Entry& e : optim::optimizers()) {
    if (!e.variants.empty() && out.find(e.variants) == std::string::npos) {
      out += "|" + std::string(e.variants);
    }
  }
  return out;
}

// --param-dtype: the storage format the parameters' values belong to.
Storage parse_param_dtype(const std::string& v) {
  if (v == "fp32") return Storage::f32;
  if (v == "bf16") return Storage::bf16;
  if (v == "fp16") return Storage::f16;
  throw InputError("--param-dtype '" + v + "': expected fp32, bf16 or fp16");
}

// A hyperparameter option: parsed here, its domain checked against the optimizer after parsing
// (optim::check_hyper_domains).
std::function<void(const std::string&)> hyper_value(std::optional<double>& field,
                                                    const char* name) {
  return [&field, name](const std::string& v) { field = number::parse_f64(v, name); };
}

// The options of the families' extra hyperparameters (optim::ExtraHyper), once per name.
void extra_hyper_options(Options& t, optim::HyperOptions& h) {
  std::vector<std::string_view> seen;
  for (const optim::Entry& e : optim::optimizers()) {
    for (const optim::ExtraHyper& x : e.def->extras) {
      if (std::find(seen.begin(), seen.end(), x.option) != seen.end()) continue;
      seen.push_back(x.option);
      const std::string name(x.option);
      if (x.flag) {
        t.flag({name.c_str()}, std::string(x.help),
               [&h, name] { h.extra.emplace_back(name, 1.0); });
      } else {
        t.value({name.c_str()}, "X", std::string(x.help), "the optimizer's library default",
                [&h, name](const std::string& v) {
                  h.extra.emplace_back(name, number::parse_f64(v, name.c_str()));
                });
      }
    }
  }
}

// The option table of exmy step, filling `o`.
Options step_options(StepArgs& o) {
  Options opts("exmy step --optimizer NAME --params P.npy --grads G.npy --out DIR [OPTIONS]",
               "Runs N optimizer steps on one tensor (docs/SEMANTICS.md 9, 11.5) and saves the "
               "state in DIR (.npy files and state.json, written last); prints state.json.",
               "exmy step --optimizer adamw --params p.npy --grads g.npy --steps 10 --out s");
  const std::string hyper_def = "the optimizer's library default (registry, SEMANTICS 9.9)";
  opts.value({"--optimizer"}, "NAME",
             "an optimizer of the registry, one of: " + optim::optimizer_names(),
             Options::kRequired, [&](const std::string& v) { o.optimizer = v; })
      .value({"--params"}, "P.npy", "the parameters: <f4 (or <f2, which implies fp16 storage)",
             Options::kRequired, [&](const std::string& v) { o.params = v; })
      .value({"--grads"}, "G.npy",
             "<f4 gradients: P's shape (the same every step) or [N, *shape] (one per step)",
             Options::kRequired, [&](const std::string& v) { o.grads = v; })
      .value({"--out"}, "DIR", "the state directory written", Options::kRequired,
             [&](const std::string& v) { o.out = v; })
      .value({"--state"}, "DIR", "resume from a state directory written by exmy step",
             "a fresh state", [&](const std::string& v) { o.state = v; })
      .value({"--steps"}, "N", "steps to run (1..2^30)", std::to_string(o.steps),
             [&](const std::string& v) {
               o.steps = static_cast<long>(parse_uint(v, "--steps", 1u << 30));
             })
      .value({"--lr"}, "X", "learning rate", hyper_def, hyper_value(o.hyper.lr, "--lr"))
      .value({"--beta1"}, "X", "Adam beta1 (momentum8bit: its momentum)", hyper_def,
             hyper_value(o.hyper.beta1, "--beta1"))
      .value({"--beta2"}, "X", "Adam beta2", hyper_def, hyper_value(o.hyper.beta2, "--beta2"))
      .value({"--eps"}, "X", "Adam epsilon", hyper_def, hyper_value(o.hyper.eps, "--eps"))
      .value({"--beta3"}, "X", "AdEMAMix's beta3 (the slow EMA)", hyper_def,
             hyper_value(o.hyper.beta3, "--beta3"))
      .value({"--alpha"}, "X", "AdEMAMix's alpha; RMSprop's smoothing constant (its beta1)",
             hyper_def, hyper_value(o.hyper.alpha, "--alpha"))
      .value({"--wd"}, "X", "weight decay", hyper_def, hyper_value(o.hyper.wd, "--wd"))
      .value({"--momentum"}, "X", "SGD momentum", hyper_def,
             hyper_value(o.hyper.momentum, "--momentum"))
      .value({"--dampening"}, "X", "SGD dampening", hyper_def,
             hyper_value(o.hyper.dampening, "--dampening"))
      .flag({"--nesterov"}, "SGD Nesterov momentum", [&] { o.hyper.nesterov = true; })
      .value({"--block"}, "B", "block size of 8-bit block-wise states (1..2^20)",
             std::to_string(o.block),
             [&](const std::string& v) {
               o.block = static_cast<int>(parse_uint(v, "--block", 1u << 20));
             })
      .flag({"--no-small-fallback"},
            "8-bit states also for tensors of fewer than 4096 elements (bitsandbytes keeps "
            "those in 32-bit)",
            [&] { o.small_fallback = false; })
      .value({"--variant"}, variant_names(),
             "a named kernel variant of the optimizer (SEMANTICS 12)", o.variant,
             [&](const std::string& v) { o.variant = v; })
      .value(
          {"--compat"}, compat_profile_names(CompatOp::step, "|"),
          "the kernels of a library profile (torch-cpu[:avx512|:avx2][:tN]: N threads, SEMANTICS "
          "9.2.2)",
          "the optimizer's (torch-cpu for adam, adamw, sgd)",
          [&](const std::string& v) { o.compat = v; })
      .value({"--param-dtype"}, "fp32|bf16|fp16",
             "storage of the parameters: every value of P must be one of this format (P stays "
             "<f4)",
             "fp32 (fp16 for a <f2 P)", [&](const std::string& v) { o.st = parse_param_dtype(v); })
      .value({"--seed"}, "S", "seed of stochastic rounding", std::to_string(o.seed),
             [&](const std::string& v) { o.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--loss-scale"}, "none|dynamic|fixed:S",
             "unscale the gradients (dynamic: PyTorch's GradScaler; a step with inf/NaN is "
             "skipped)",
             o.loss_scale, [&](const std::string& v) { o.loss_scale = v; })
      .value({"--device"}, "cpu|cuda", "run the CPU steps or the GPU kernels (the same bytes)",
             "cpu", [&](const std::string& v) { o.device = parse_device(v); })
      .flag({"--quiet"}, "no progress on stderr (else a line a second after the first two seconds)",
            [&] { o.quiet = true; });
  extra_hyper_options(opts, o.hyper);
  return opts;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string t = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) t += (k ? ", " : "") + std::to_string(shape[k]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

// Progress of a long run on stderr: steps done, rate and the time left, at most once a second
// and only after the first two seconds (short runs print nothing). EXMY_PROGRESS_SECONDS=S sets
// both delays to S seconds (tests use 0: a line per step); --quiet prints nothing.
class Progress {
 public:
  Progress(long total, bool quiet)
      : total_(total), quiet_(quiet), start_(Clock::now()), last_(start_) {
    if (const char* e = std::getenv("EXMY_PROGRESS_SECONDS")) {
      const double s = number::parse_f64(e, "EXMY_PROGRESS_SECONDS");
      number::require_range(s, e, "EXMY_PROGRESS_SECONDS", 0.0, false, 1e6, false);
      first_ = every_ = std::chrono::duration<double>(s);
    }
  }
  void update(long done) {
    const auto now = Clock::now();
    if (quiet_ || done == 0 || now - last_ < every_ || now - start_ < first_) return;
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
  bool quiet_;
  Clock::time_point start_, last_;
  std::chrono::duration<double> first_{2.0}, every_{1.0};
  bool printed_ = false;
};

int run_step(const Args& args) {
  StepArgs o;
  if (!step_options(o).parse(args)) return 0;
  optim::Config c;
  c.opt = optim::find_optimizer(o.optimizer);
  const optim::Entry& e = *c.opt.entry;
  optim::check_hyper_applies(e, o.hyper);  // an option the optimizer does not read: refused
  c.hyper = optim::resolve_hyper(e, o.hyper);
  optim::check_hyper_domains(e, c.hyper);
  c.st = o.st;
  c.block = o.block;
  c.small_fallback = o.small_fallback;
  c.variant = o.variant;
  c.seed = o.seed;
  // The profile's kernels (sim/optim/registry.hpp), as the Python module and the golden corpus
  // apply them.
  optim::apply_compat(c, o.compat);

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
  c.shape = pa.shape;  // the families that factor by shape (Adafactor) read it
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
  optim::State state = optim::init_state(c, p);
  optim::Resume resume;
  if (!o.state.empty()) {
    resume = optim::resume_state_dir(c, o.optimizer, o.state, p, o.params, pa.shape, state,
                                     {o.compat, o.steps});
  }
  const long t0 = resume.step;
  optim::DynamicScaler scaler = resume.scaler;

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
  optim::RunRecord rec;
  Progress progress(o.steps, o.quiet);
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
        rec.note_skipped(k);
        continue;
      }
    } else if (scale_mode == Scale::fixed) {
      const bool inf = optim::unscale_and_check(g, fixed_scale);
      if (inf) {
        rec.note_skipped(k);
        continue;
      }
    }
    ++t;
    const float rms = engine->step(t, gk);
    if (e.reports_rms) rec.note_rms(rms);
  }
  engine->finish();
  progress.finish(o.steps);
  optim::final_params(c, state, p);
  optim::canonical_nans(c, state, p);

  // Output: the state directory (sim/optim/state_file.hpp), state.json written last.
  rec.optimizer = o.optimizer;
  rec.n = n;
  rec.step = t;
  rec.block = o.block;
  rec.is_8bit = state.bnb.is_8bit;
  rec.seed = o.seed;
  rec.scaler = scaler;
  rec.variant = o.variant;
  rec.compat = o.compat;
  const std::string json = optim::state_json(c, rec);
  optim::write_state_dir(o.out, c, pa.shape, p, state, json);
  std::printf("%s", json.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("step", run_step,
             "optimizer steps (AdamW, SGD, 8-bit, StableAdamW, 16-bit + extra bits) on .npy");

}  // namespace exmy::cli
