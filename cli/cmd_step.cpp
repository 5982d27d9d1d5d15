// exmy step --optimizer NAME --params P.npy --grads G.npy [--state DIR] --steps N --out DIR
//           [--lr X --beta1 X --beta2 X --eps X --wd X --momentum X --dampening X --nesterov]
//           [--block 256|2048] [--no-small-fallback] [--variant default|torch-fused|torch-order]
//           [--param-dtype fp32|bf16|fp16] [--seed S] [--loss-scale none|dynamic|fixed:S]
//           [--device cpu|cuda]
// Runs N optimizer steps on one tensor (docs/SEMANTICS.md 9, 11.5). NAME is an entry of the
// optimizer registry (sim/optim/registry.hpp), which also gives its defaults, its state files and
// its CPU step; --device cuda runs the GPU kernels of gpu/optim.hpp (gpu/optim_host.hpp), states
// staying on the device between steps, and writes the same bytes. G.npy has P's shape (the same
// gradient every step) or [N, *shape] (one per step). The state is saved in DIR as .npy files and
// state.json (written last), and reloads without loss with --state DIR.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"
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
  Storage st = Storage::f32;
  std::uint64_t seed = 0;
  std::string loss_scale = "none";
  Device device = Device::cpu;
};

double parse_double(const std::string& v, const std::string& what) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d)) {
    throw InputError(what + " '" + v + "': expected a finite number");
  }
  return d;
}

Options parse(const Args& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--optimizer") {
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
      o.hyper.lr = parse_double(option_value(args, i), "--lr");
    } else if (a == "--beta1") {
      o.hyper.beta1 = parse_double(option_value(args, i), "--beta1");
    } else if (a == "--beta2") {
      o.hyper.beta2 = parse_double(option_value(args, i), "--beta2");
    } else if (a == "--eps") {
      o.hyper.eps = parse_double(option_value(args, i), "--eps");
    } else if (a == "--wd") {
      o.hyper.wd = parse_double(option_value(args, i), "--wd");
    } else if (a == "--momentum") {
      o.hyper.momentum = parse_double(option_value(args, i), "--momentum");
    } else if (a == "--dampening") {
      o.hyper.dampening = parse_double(option_value(args, i), "--dampening");
    } else if (a == "--nesterov") {
      o.hyper.nesterov = true;
    } else if (a == "--block") {
      o.block = static_cast<int>(parse_uint(option_value(args, i), "--block", 1u << 20));
    } else if (a == "--no-small-fallback") {
      o.small_fallback = false;
    } else if (a == "--variant") {
      o.variant = option_value(args, i);
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
      throw InputError("unknown option '" + a + "' (see the header of exmy step --help)");
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

// ---- state.json: a flat object written and read by this file only ------------------------------
std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
std::string json_field(const std::string& js, const std::string& key, const std::string& file) {
  const std::string k = "\"" + key + "\":";
  const auto pos = js.find(k);
  if (pos == std::string::npos) throw InputError(file + ": missing \"" + key + "\"");
  std::size_t b = pos + k.size(), e = b;
  if (js[b] == '"') {
    e = js.find('"', b + 1);
    return js.substr(b + 1, e - b - 1);
  }
  while (e < js.size() && js[e] != ',' && js[e] != '}') ++e;
  return js.substr(b, e - b);
}
void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f) throw InputError(path + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw InputError(path + ": cannot rename");
}

int run_step(const Args& args) {
  const Options o = parse(args);
  optim::Config c;
  c.opt = optim::find_optimizer(o.optimizer);
  const optim::Entry& e = *c.opt.entry;
  c.hyper = optim::resolve_hyper(e, o.hyper);
  c.st = o.st;
  c.block = o.block;
  c.small_fallback = o.small_fallback;
  c.variant = o.variant;
  c.seed = o.seed;

  // Parameters and gradients.
  const io::NpyArray pa = io::read_npy(o.params);
  std::vector<float> p;
  if (pa.descr == io::kDescrF16) {
    const auto u = io::as_u16(io::NpyArray{io::kDescrU16, pa.shape, false, pa.data}, o.params);
    p.resize(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) p[i] = native::f32_from_f16(u[i]);
    c.st = Storage::f16;
  } else {
    p = io::as_f32(pa, o.params);
  }
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
  const io::NpyArray ga = io::read_npy(o.grads);
  const std::vector<float> gall = io::as_f32(ga, o.grads);
  const bool per_step = gall.size() == n * static_cast<std::size_t>(o.steps) && o.steps > 1 &&
                        ga.shape.size() == pa.shape.size() + 1;
  if (gall.size() != n && !per_step) {
    throw InputError(o.grads + ": expected the parameters' shape or [steps, *shape] (" +
                     std::to_string(n) + " or " + std::to_string(n * o.steps) + " elements), got " +
                     std::to_string(gall.size()));
  }

  // State: fresh, or reloaded from --state.
  long t0 = 0;
  optim::DynamicScaler scaler;
  optim::State state = optim::init_state(c, p);
  std::string js;
  if (!o.state.empty()) js = read_text(o.state + "/state.json");
  if (!js.empty()) {
    const std::string sf = o.state + "/state.json";
    if (json_field(js, "optimizer", sf) != o.optimizer) {
      throw InputError(sf + ": state of optimizer '" + json_field(js, "optimizer", sf) +
                       "', not '" + o.optimizer + "'");
    }
    if (std::stoull(json_field(js, "n", sf)) != n) {
      throw InputError(sf + ": state for " + json_field(js, "n", sf) + " elements, params have " +
                       std::to_string(n));
    }
    t0 = std::stol(json_field(js, "step", sf));
    scaler.scale = std::stof(json_field(js, "scale", sf));
    scaler.growth_tracker = std::stoi(json_field(js, "growth_tracker", sf));
    if (optim::is_blockwise(e) &&
        (std::stoi(json_field(js, "block", sf)) != o.block ||
         (json_field(js, "is_8bit", sf) == "true") != state.bnb.is_8bit)) {
      throw InputError(sf + ": block size or 8-bit/32-bit layout differs from the options");
    }
    if (e.split && json_field(js, "split_format", sf) != optim::split_format_name(c.opt.split)) {
      throw InputError(sf + ": split format differs from --optimizer");
    }
    optim::load_state(c, o.state, p, o.params, state);
  }

  // Loss scaling.
  enum class Scale { none, dynamic, fixed } scale_mode = Scale::none;
  float fixed_scale = 1.0f;
  if (o.loss_scale == "dynamic") {
    scale_mode = Scale::dynamic;
  } else if (o.loss_scale.compare(0, 6, "fixed:") == 0) {
    scale_mode = Scale::fixed;
    fixed_scale = static_cast<float>(parse_double(o.loss_scale.substr(6), "--loss-scale fixed:S"));
  } else if (o.loss_scale != "none") {
    throw InputError("--loss-scale '" + o.loss_scale + "': expected none, dynamic or fixed:S");
  }

  // The steps, on the engine of --device; gradients are unscaled on the host either way.
  const std::unique_ptr<optim::Stepper> engine =
      o.device == Device::cuda ? gpu::optim_stepper(c, p, state) : optim::cpu_stepper(c, p, state);
  long t = t0;
  std::string rms_list, skipped_list;
  for (long k = 0; k < o.steps; ++k) {
    std::vector<float> g(gall.begin() + static_cast<long>(per_step ? k * n : 0),
                         gall.begin() + static_cast<long>(per_step ? (k + 1) * n : n));
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
    const float rms = engine->step(t, g);
    if (e.reports_rms) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", rms);
      rms_list += (rms_list.empty() ? "" : ",") + std::string(buf);
    }
  }
  engine->finish();
  optim::final_params(c, state, p);
  optim::canonical_nans(c, state, p);

  // Output: arrays first (each atomic), state.json last.
  mkdir(o.out.c_str(), 0777);
  struct stat sb {};
  if (stat(o.out.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    throw InputError("--out '" + o.out + "': cannot create the directory");
  }
  io::write_npy(o.out + "/params.npy", io::make_npy(p, pa.shape));
  optim::save_state(c, o.out, pa.shape, state);
  char sc[64];
  std::snprintf(sc, sizeof sc, "%.9g", static_cast<double>(scaler.scale));
  std::string json =
      "{\"optimizer\":" + json_string(o.optimizer) + ",\"n\":" + std::to_string(n) +
      ",\"step\":" + std::to_string(t) + ",\"block\":" + std::to_string(o.block) +
      ",\"is_8bit\":" + (state.bnb.is_8bit ? "true" : "false") +
      ",\"split_format\":" + json_string(e.split ? optim::split_format_name(c.opt.split) : "") +
      ",\"seed\":" + std::to_string(o.seed) + ",\"scale\":" + sc +
      ",\"growth_tracker\":" + std::to_string(scaler.growth_tracker) +
      ",\"variant\":" + json_string(o.variant) + ",\"rms\":[" + rms_list + "],\"skipped\":[" +
      skipped_list + "]}\n";
  write_text_atomic(o.out + "/state.json", json);
  std::printf("%s", json.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("step", run_step,
             "optimizer steps (AdamW, SGD, 8-bit, StableAdamW, 16-bit + extra bits) on .npy");

}  // namespace exmy::cli
