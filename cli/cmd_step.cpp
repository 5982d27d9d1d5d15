// exmy step --optimizer NAME --params P.npy --grads G.npy [--state DIR] --steps N --out DIR
//           [--lr X --beta1 X --beta2 X --eps X --wd X --momentum X --dampening X --nesterov]
//           [--block 256|2048] [--no-small-fallback] [--variant default|torch-fused|torch-order]
//           [--param-dtype fp32|bf16|fp16] [--seed S] [--loss-scale none|dynamic|fixed:S]
// Runs N optimizer steps on one tensor (docs/SEMANTICS.md 9, 11). G.npy has P's shape (the same
// gradient every step) or [N, *shape] (one per step). The state is saved in DIR as .npy files and
// state.json (written last), and reloads without loss with --state DIR.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::cli {
namespace {

using optim::Storage;

enum class Kind { adam, sgd, bnb_adam, bnb_momentum, stable, split_adam, split_sgd };

struct Options {
  std::string optimizer, params, grads, state, out;
  long steps = 1;
  optim::AdamHyper adam;
  optim::SgdHyper sgd;
  bool have_lr = false, have_wd = false, have_beta1 = false;
  int block = 256;
  bool small_fallback = true;
  std::string variant = "default";
  Storage st = Storage::f32;
  std::uint64_t seed = 0;
  std::string loss_scale = "none";
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
      o.adam.lr = o.sgd.lr = parse_double(option_value(args, i), "--lr");
      o.have_lr = true;
    } else if (a == "--beta1") {
      o.adam.beta1 = parse_double(option_value(args, i), "--beta1");
      o.have_beta1 = true;
    } else if (a == "--beta2") {
      o.adam.beta2 = parse_double(option_value(args, i), "--beta2");
    } else if (a == "--eps") {
      o.adam.eps = parse_double(option_value(args, i), "--eps");
    } else if (a == "--wd") {
      o.adam.wd = o.sgd.wd = parse_double(option_value(args, i), "--wd");
      o.have_wd = true;
    } else if (a == "--momentum") {
      o.sgd.momentum = parse_double(option_value(args, i), "--momentum");
    } else if (a == "--dampening") {
      o.sgd.dampening = parse_double(option_value(args, i), "--dampening");
    } else if (a == "--nesterov") {
      o.sgd.nesterov = true;
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
    } else {
      throw InputError("unknown option '" + a + "' (see the header of exmy step --help)");
    }
  }
  if (o.optimizer.empty()) throw InputError("--optimizer is required");
  if (o.params.empty()) throw InputError("--params is required");
  if (o.grads.empty()) throw InputError("--grads is required");
  if (o.out.empty()) throw InputError("--out is required");
  return o;
}

Kind kind_of(const std::string& name, optim::SplitFormat& split, bool& decoupled) {
  decoupled = true;
  if (name == "adamw") return Kind::adam;
  if (name == "adam") {
    decoupled = false;
    return Kind::adam;
  }
  if (name == "sgd") return Kind::sgd;
  if (name == "adamw8bit" || name == "adam8bit") return Kind::bnb_adam;
  if (name == "momentum8bit") return Kind::bnb_momentum;
  if (name == "stableadamw") return Kind::stable;
  for (const char* pre : {"adamw-", "adam-", "sgd-"}) {
    const std::string p = pre;
    if (name.compare(0, p.size(), p) == 0) {
      split = optim::parse_split_format(name.substr(p.size()));
      decoupled = p != "adam-";
      return p == "sgd-" ? Kind::split_sgd : Kind::split_adam;
    }
  }
  throw InputError("--optimizer '" + name +
                   "': expected adamw, adam, sgd, adamw8bit, adam8bit, momentum8bit, stableadamw, "
                   "adamw-bf16+K, adamw-fp16+K, sgd-bf16+K or sgd-fp16+K (K extra bits, :sr)");
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

std::vector<float> load_f32(const std::string& path, std::size_t n) {
  const io::NpyArray a = io::read_npy(path);
  auto v = io::as_f32(a, path);
  if (v.size() != n) {
    throw InputError(path + ": expected " + std::to_string(n) + " elements, got " +
                     std::to_string(v.size()));
  }
  return v;
}
template <typename T, typename Conv>
std::vector<T> load_typed(const std::string& path, std::size_t n, Conv conv) {
  auto v = conv(io::read_npy(path), path);
  if (v.size() != n) {
    throw InputError(path + ": expected " + std::to_string(n) + " elements, got " +
                     std::to_string(v.size()));
  }
  return v;
}

int run_step(const Args& args) {
  Options o = parse(args);
  optim::SplitFormat split;
  bool decoupled = true;
  const Kind kind = kind_of(o.optimizer, split, decoupled);
  if (o.variant != "default" && !(o.variant == "torch-fused" && kind == Kind::adam) &&
      !(o.variant == "torch-order" && kind == Kind::bnb_adam)) {
    throw InputError("--variant '" + o.variant +
                     "': expected default, torch-fused (adam/adamw) or torch-order (8-bit Adam)");
  }
  if (o.variant == "torch-fused" && o.st != Storage::f32) {
    throw InputError("--variant torch-fused: fp32 parameters only");
  }
  // Defaults that differ per optimizer, as the libraries set them.
  if (!o.have_lr) o.adam.lr = o.sgd.lr = 1e-3;
  if (!o.have_wd) {
    o.adam.wd = (o.optimizer == "adamw" || o.optimizer == "adamw8bit") ? 1e-2 : 0.0;
    if (kind == Kind::split_adam && decoupled) o.adam.wd = 1e-2;
    o.sgd.wd = 0.0;
  }
  if (kind == Kind::stable && !o.have_wd) o.adam.wd = 0.0;
  if (kind == Kind::bnb_momentum && o.have_beta1) o.sgd.momentum = o.adam.beta1;
  if (kind == Kind::bnb_momentum && !o.have_beta1) o.adam.beta1 = o.sgd.momentum;

  // Parameters and gradients.
  const io::NpyArray pa = io::read_npy(o.params);
  std::vector<float> p;
  if (pa.descr == io::kDescrF16) {
    const auto u = io::as_u16(io::NpyArray{io::kDescrU16, pa.shape, false, pa.data}, o.params);
    p.resize(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) p[i] = native::f32_from_f16(u[i]);
    o.st = Storage::f16;
  } else {
    p = io::as_f32(pa, o.params);
  }
  const std::size_t n = p.size();
  if (kind != Kind::split_adam && kind != Kind::split_sgd) {
    for (std::size_t i = 0; i < n; ++i) {
      if (native::f32_bits(native::to_storage(p[i], o.st)) != native::f32_bits(p[i]) &&
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
  std::vector<float> s1(n, 0.0f), s2(n, 0.0f);
  optim::Bnb8State bnb;
  optim::SplitTensor sp;
  const bool two = kind == Kind::bnb_adam;
  if (kind == Kind::bnb_adam || kind == Kind::bnb_momentum) {
    bnb = optim::bnb8_init(n, two, o.block, o.small_fallback);
  }
  if (kind == Kind::split_adam || kind == Kind::split_sgd)
    sp = optim::split_tensor(p, split, o.seed);
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
    const std::string d = o.state + "/";
    switch (kind) {
      case Kind::adam:
      case Kind::stable:
      case Kind::split_adam:
        s1 = load_f32(d + "state1.npy", n);
        s2 = load_f32(d + "state2.npy", n);
        break;
      case Kind::sgd:
      case Kind::split_sgd:
        s1 = load_f32(d + "state1.npy", n);
        break;
      case Kind::bnb_adam:
      case Kind::bnb_momentum:
        if (std::stoi(json_field(js, "block", sf)) != o.block ||
            (json_field(js, "is_8bit", sf) == "true") != bnb.is_8bit) {
          throw InputError(sf + ": block size or 8-bit/32-bit layout differs from the options");
        }
        if (bnb.is_8bit) {
          bnb.q1 = load_typed<std::uint8_t>(d + "state1.npy", n, io::as_u8);
          bnb.absmax1 = load_f32(d + "absmax1.npy", bnb.absmax1.size());
          if (two) {
            bnb.q2 = load_typed<std::uint8_t>(d + "state2.npy", n, io::as_u8);
            bnb.absmax2 = load_f32(d + "absmax2.npy", bnb.absmax2.size());
          }
        } else {
          bnb.s1 = load_f32(d + "state1.npy", n);
          if (two) bnb.s2 = load_f32(d + "state2.npy", n);
        }
        break;
    }
    if (kind == Kind::split_adam || kind == Kind::split_sgd) {
      if (json_field(js, "split_format", sf) != optim::split_format_name(split)) {
        throw InputError(sf + ": split format differs from --optimizer");
      }
      sp.hi = load_typed<std::uint16_t>(d + "hi.npy", n, io::as_u16);
      sp.extra = load_typed<std::uint32_t>(d + "extra.npy", sp.extra.size(), io::as_u32);
      // The split state is authoritative; --params must be its joined values (params.npy of
      // the run that wrote the state).
      const std::vector<float> joined = optim::join_tensor(sp);
      for (std::size_t i = 0; i < n; ++i) {
        if (native::f32_bits(joined[i]) != native::f32_bits(p[i]) &&
            !(std::isnan(joined[i]) && std::isnan(p[i]))) {
          throw InputError(o.params + ": element " + std::to_string(i) +
                           " differs from the split state in " + o.state +
                           " (pass that run's params.npy)");
        }
      }
    }
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
    switch (kind) {
      case Kind::adam:
        if (o.variant == "torch-fused") {
          optim::adam_fused_step(o.adam, decoupled, t, p, g, s1, s2);
        } else {
          optim::adam_step(o.adam, decoupled, o.st, t, p, g, s1, s2);
        }
        break;
      case Kind::sgd:
        optim::sgd_step(o.sgd, o.st, t, p, g, s1);
        break;
      case Kind::bnb_adam:
        optim::bnb_adam8_step(optim::bnb8_scalars(o.adam, t, o.variant == "torch-order"), o.st, p,
                              g, bnb);
        break;
      case Kind::bnb_momentum:
        optim::bnb_momentum8_step(optim::bnb8_scalars(o.adam, t, false), o.st, p, g, bnb);
        break;
      case Kind::stable: {
        const float rms = optim::stable_adamw_step(o.adam, t, p, g, s1, s2);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", rms);
        rms_list += (rms_list.empty() ? "" : ",") + std::string(buf);
        break;
      }
      case Kind::split_adam:
        optim::split_adam_step(o.adam, decoupled, t, o.seed, sp, g, s1, s2);
        break;
      case Kind::split_sgd:
        optim::split_sgd_step(o.sgd, t, o.seed, sp, g, s1);
        break;
    }
  }
  if (kind == Kind::split_adam || kind == Kind::split_sgd) p = optim::join_tensor(sp);

  // Output: arrays first (each atomic), state.json last.
  mkdir(o.out.c_str(), 0777);
  struct stat sb {};
  if (stat(o.out.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    throw InputError("--out '" + o.out + "': cannot create the directory");
  }
  const std::string d = o.out + "/";
  io::write_npy(d + "params.npy", io::make_npy(p, pa.shape));
  switch (kind) {
    case Kind::adam:
    case Kind::stable:
    case Kind::split_adam:
      io::write_npy(d + "state1.npy", io::make_npy(s1, pa.shape));
      io::write_npy(d + "state2.npy", io::make_npy(s2, pa.shape));
      break;
    case Kind::sgd:
    case Kind::split_sgd:
      io::write_npy(d + "state1.npy", io::make_npy(s1, pa.shape));
      break;
    case Kind::bnb_adam:
    case Kind::bnb_momentum:
      if (bnb.is_8bit) {
        io::write_npy(d + "state1.npy", io::make_npy(bnb.q1, pa.shape));
        io::write_npy(d + "absmax1.npy", io::make_npy(bnb.absmax1));
        if (two) {
          io::write_npy(d + "state2.npy", io::make_npy(bnb.q2, pa.shape));
          io::write_npy(d + "absmax2.npy", io::make_npy(bnb.absmax2));
        }
      } else {
        io::write_npy(d + "state1.npy", io::make_npy(bnb.s1, pa.shape));
        if (two) io::write_npy(d + "state2.npy", io::make_npy(bnb.s2, pa.shape));
      }
      break;
  }
  if (kind == Kind::split_adam || kind == Kind::split_sgd) {
    io::write_npy(d + "hi.npy", io::make_npy(sp.hi, pa.shape));
    io::write_npy(d + "extra.npy", io::make_npy(sp.extra));
  }
  char sc[64];
  std::snprintf(sc, sizeof sc, "%.9g", static_cast<double>(scaler.scale));
  std::string json = "{\"optimizer\":" + json_string(o.optimizer) + ",\"n\":" + std::to_string(n) +
                     ",\"step\":" + std::to_string(t) + ",\"block\":" + std::to_string(o.block) +
                     ",\"is_8bit\":" + (bnb.is_8bit ? "true" : "false") + ",\"split_format\":" +
                     json_string((kind == Kind::split_adam || kind == Kind::split_sgd)
                                     ? optim::split_format_name(split)
                                     : "") +
                     ",\"seed\":" + std::to_string(o.seed) + ",\"scale\":" + sc +
                     ",\"growth_tracker\":" + std::to_string(scaler.growth_tracker) +
                     ",\"variant\":" + json_string(o.variant) + ",\"rms\":[" + rms_list +
                     "],\"skipped\":[" + skipped_list + "]}\n";
  write_text_atomic(d + "state.json", json);
  std::printf("%s", json.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("step", run_step,
             "optimizer steps (AdamW, SGD, 8-bit, StableAdamW, 16-bit + extra bits) on .npy");

}  // namespace exmy::cli
