#include "sim/gemm/gemm_profile.hpp"

#include <cctype>
#include <cstdlib>

#include "sim/common/error.hpp"
#include "sim/io/files.hpp"
#include "sim/io/json.hpp"

namespace exmy::gemm {

std::string launch_key(const std::string& in, const std::string& out, std::size_t M, std::size_t N,
                       std::size_t K) {
  return in + ">" + out + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
         std::to_string(K);
}

const LaunchRecord* find_launch(const GemmProfile& p, const std::string& in, const std::string& out,
                                std::size_t M, std::size_t N, std::size_t K) {
  const auto it = p.launch.find(launch_key(in, out, M, N, K));
  return it == p.launch.end() ? nullptr : &it->second;
}

bool is_blockwise_type(const std::string& t) {
  return t == "e4m3fn:1x128.128x128" || t == "e4m3fn:1x128.1x128" || t == "e4m3fn:128x128.1x128";
}

std::string gpu_name(const std::string& device) {
  std::string d = device;
  if (d.rfind("NVIDIA ", 0) == 0) {
    d = d.substr(7);
    d = d.substr(0, d.find(' '));
  }
  for (char& c : d) {
    c = c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return d;
}

std::vector<std::string> launch_gpus(const GemmProfile& p) {
  std::vector<std::string> names;
  if (!p.launch_device.empty() || !p.launch.empty()) names.push_back(gpu_name(p.launch_device));
  for (const LaunchGpu& g : p.other_gpus) names.push_back(g.name);
  return names;
}

const LaunchRecord* find_launch_on(const GemmProfile& p, const std::string& gpu,
                                   const std::string& key) {
  const auto base = p.launch.find(key);
  const LaunchRecord* from_base = base == p.launch.end() ? nullptr : &base->second;
  if (!launch_gpus(p).empty() && gpu == launch_gpus(p).front()) return from_base;
  for (const LaunchGpu& g : p.other_gpus) {
    if (g.name != gpu) continue;
    const auto it = g.differ.find(key);
    if (it != g.differ.end()) return &it->second;
    return g.absent.count(key) != 0 ? nullptr : from_base;
  }
  std::string have;
  for (const std::string& n : launch_gpus(p)) have += (have.empty() ? "" : ", ") + n;
  throw InputError(p.source + ": no launch records of GPU '" + gpu + "' (it holds " +
                   (have.empty() ? std::string("none") : have) + ")");
}

bool launches_differ(const GemmProfile& p, const std::string& key) {
  // A delta lists a GEMM when its launch differs from the base's or the base lacks it: they
  // disagree when the base (or another delta) recorded it too.
  const bool in_base = p.launch.count(key) != 0;
  int listed = 0;
  for (const LaunchGpu& g : p.other_gpus) listed += g.differ.count(key) != 0 ? 1 : 0;
  return listed > 0 && (in_base || listed > 1);
}

namespace {

// The first kernel name an entry records ("kernels": a list, or per output an object of lists).
std::string entry_kernel(const io::Json& e) {
  const io::Json* k = e.find("kernels");
  if (k == nullptr) return "";
  if (k->kind == io::Json::Kind::object && !k->values.empty()) k = &k->values.front();
  if (k->kind == io::Json::Kind::array && !k->items.empty() &&
      k->items.front().kind == io::Json::Kind::string) {
    return k->items.front().text;
  }
  return "";
}

bool is_type(const std::string& t) {
  return t == "bf16" || t == "fp16" || t == "tf32" || t == "fp32";
}

void read_launch(const io::Json& launch, const std::string& src, GemmProfile& p) {
  const std::string at = src + ": launch";
  if (launch.kind != io::Json::Kind::object) throw InputError(at + ": expected an object");
  const io::Json& info = launch.at("info", at);
  if (info.kind != io::Json::Kind::object) throw InputError(at + ".info: expected an object");
  std::string device;
  if (const io::Json* d = info.find("device")) device = d->str(at + ".info.device");
  // A delta (launch.base): this GPU's records where they differ from the base GPU's.
  const io::Json* base = launch.find("base");
  LaunchGpu* delta = nullptr;
  if (base != nullptr) {
    if (base->kind != io::Json::Kind::object) throw InputError(at + ".base: expected an object");
    if (device.empty()) throw InputError(at + ".info.device: a delta (launch.base) needs one");
    LaunchGpu g;
    g.device = device;
    g.name = gpu_name(device);
    g.base_device = base->at("device", at + ".base").str(at + ".base.device");
    if (g.base_device == device) throw InputError(at + ".base.device: the delta's own device");
    p.other_gpus.push_back(g);
    delta = &p.other_gpus.back();
  } else {
    p.launch_device = device;
  }
  const io::Json& kernels = launch.at("kernels", at);
  if (kernels.kind != io::Json::Kind::array) throw InputError(at + ".kernels: expected an array");
  std::vector<LaunchRecord> ks;
  for (std::size_t i = 0; i < kernels.items.size(); ++i) {
    const std::string w = at + ".kernels[" + std::to_string(i) + "]";
    const io::Json& k = kernels.items[i];
    if (k.kind != io::Json::Kind::array || k.items.size() != 3) {
      throw InputError(w + ": expected [family, key, reduce]");
    }
    LaunchRecord r;
    r.family = k.items[0].str(w + "[0] (family)");
    r.key = k.items[1].str(w + "[1] (key)");
    r.reduce = k.items[2].str(w + "[2] (reduce)");
    ks.push_back(r);
  }
  const io::Json& records = launch.at("records", at);
  if (records.kind != io::Json::Kind::object) {
    throw InputError(at + ".records: expected an object of \"IN>OUT\": [M, N, K, kernel, S, ...]");
  }
  for (std::size_t g = 0; g < records.keys.size(); ++g) {
    const std::string& io_key = records.keys[g];
    const std::string w = at + ".records[\"" + io_key + "\"]";
    const auto gt = io_key.find('>');
    const std::string in = io_key.substr(0, gt);
    const std::string out = gt == std::string::npos ? "" : io_key.substr(gt + 1);
    // OUT+bias: the GEMM with cuBLASLt's bias epilogue (torch's addmm, F.linear with a bias;
    // bench/peers/qlora_linear_launch_capture.py), which launches kernels of its own.
    const std::size_t plus = out.find('+');
    const std::string plain = out.substr(0, plus);
    // e4m3fn:PAIR (torch._scaled_mm with fp32 tile scales, bench/peers/
    // blockfp8_splitk_records.py): a bf16 or fp32 output, no bias.
    const bool blockwise = is_blockwise_type(in);
    const bool out_ok =
        blockwise ? out == "bf16" || out == "fp32"
                  : (plain == "fp32" || ((in == "bf16" || in == "fp16") && plain == in)) &&
                        (plus == std::string::npos || out.substr(plus) == "+bias");
    if (gt == std::string::npos || !(is_type(in) || blockwise) || !out_ok) {
      throw InputError(w +
                       ": expected IN>OUT or IN>OUT+bias with IN bf16, fp16, tf32 or fp32 and "
                       "OUT fp32 or the 16-bit input's own type, or e4m3fn:PAIR>OUT with PAIR "
                       "1x128.128x128, 1x128.1x128 or 128x128.1x128 and OUT bf16 or fp32");
    }
    const io::Json& flat = records.values[g];
    if (flat.kind != io::Json::Kind::array || flat.items.size() % 5 != 0) {
      throw InputError(w + ": expected a flat array of [M, N, K, kernel index, S] groups");
    }
    for (std::size_t i = 0; i < flat.items.size(); i += 5) {
      auto num = [&](std::size_t j, const char* name) {
        const std::uint64_t v =
            flat.items[i + j].u64(w + "[" + std::to_string(i + j) + "] (" + name + ")");
        return v;
      };
      const std::uint64_t M = num(0, "M"), N = num(1, "N"), K = num(2, "K"), k = num(3, "kernel"),
                          S = num(4, "S");
      const std::string wi = w + "[" + std::to_string(i) + ".." + std::to_string(i + 4) + "]";
      if (M == 0 || N == 0 || K == 0 || S == 0) {
        throw InputError(wi + ": M, N, K and S must be positive");
      }
      if (k >= ks.size()) {
        throw InputError(wi + ": kernel index " + std::to_string(k) + " (the profile has " +
                         std::to_string(ks.size()) + " kernels)");
      }
      LaunchRecord r = ks[k];
      r.split = S;
      (delta != nullptr ? delta->differ : p.launch)[launch_key(in, out, M, N, K)] = r;
    }
  }
  if (delta == nullptr) return;
  const io::Json* absent = launch.find("absent");
  if (absent == nullptr) return;
  if (absent->kind != io::Json::Kind::object) {
    throw InputError(at + ".absent: expected an object of \"IN>OUT\": [M, N, K, ...]");
  }
  for (std::size_t g = 0; g < absent->keys.size(); ++g) {
    const std::string w = at + ".absent[\"" + absent->keys[g] + "\"]";
    const io::Json& flat = absent->values[g];
    const auto gt = absent->keys[g].find('>');
    if (gt == std::string::npos) throw InputError(w + ": expected IN>OUT");
    if (flat.kind != io::Json::Kind::array || flat.items.size() % 3 != 0) {
      throw InputError(w + ": expected a flat array of [M, N, K] groups");
    }
    for (std::size_t i = 0; i < flat.items.size(); i += 3) {
      const std::string wi = w + "[" + std::to_string(i) + "]";
      delta->absent.insert(launch_key(absent->keys[g].substr(0, gt), absent->keys[g].substr(gt + 1),
                                      flat.items[i].u64(wi), flat.items[i + 1].u64(wi),
                                      flat.items[i + 2].u64(wi)));
    }
  }
}

}  // namespace

GemmProfile parse_gemm_profile(const std::string& text, const std::string& source) {
  const io::Json j = io::parse_json(text, source);
  GemmProfile p;
  p.source = source;
  if (j.kind != io::Json::Kind::object) throw InputError(source + ": expected a JSON object");
  const io::Json* entries = j.find("entries");
  const io::Json* launch = j.find("launch");
  if (entries == nullptr && launch == nullptr) {
    throw InputError(source +
                     ": expected 'entries' (exmy probe gemm) or 'launch' (exmy probe gemm "
                     "--launch)");
  }
  if (entries != nullptr) {
    if (const io::Json* d = j.find("device")) p.entries_device = d->str(source + ": device");
    if (entries->kind != io::Json::Kind::array) {
      throw InputError(source + ": entries: expected an array");
    }
    for (std::size_t i = 0; i < entries->items.size(); ++i) {
      const io::Json& e = entries->items[i];
      const std::string w = source + ": entries[" + std::to_string(i) + "]";
      const io::Json* model = e.find("model");
      const bool modelled = model != nullptr && model->kind == io::Json::Kind::string;
      p.entries.push_back({e.at("type", w).str(w + ".type"), e.at("M", w).u64(w + ".M"),
                           e.at("N", w).u64(w + ".N"), e.at("K", w).u64(w + ".K"),
                           modelled ? model->text : std::string(), entry_kernel(e)});
    }
  }
  if (launch != nullptr) read_launch(*launch, source, p);
  return p;
}

void merge_gemm_profile(GemmProfile& into, const GemmProfile& more) {
  into.entries.insert(into.entries.end(), more.entries.begin(), more.entries.end());
  if (into.entries_device.empty()) into.entries_device = more.entries_device;
  for (const auto& [k, v] : more.launch) into.launch[k] = v;
  if (!more.launch_device.empty()) into.launch_device = more.launch_device;
  for (const LaunchGpu& g : more.other_gpus) {
    if (g.base_device != into.launch_device) {
      throw InputError(more.source + ": launch.base.device: a delta against '" + g.base_device +
                       "', but the launch records here are of '" + into.launch_device + "'");
    }
    std::erase_if(into.other_gpus, [&](const LaunchGpu& o) { return o.name == g.name; });
    into.other_gpus.push_back(g);
  }
}

namespace {
const char kCublasSm90Profile[] =
#include "cublas_sm90_profile.inc"
    ;
const char kCublasSm90Launch[] =
#include "cublas_sm90_launch.inc"
    ;
const char kCublasSm90LaunchH200[] =
#include "cublas_sm90_launch_h200.inc"
    ;
}  // namespace

const GemmProfile& cublas_sm90_profile() {
  static const GemmProfile profile = [] {
    const char* env = std::getenv("EXMY_GEMM_PROFILE");
    if (env != nullptr && *env != '\0') {
      GemmProfile mine = parse_gemm_profile(
          io::read_small_file(env, std::size_t{64} << 20, "a GEMM profile (exmy probe gemm)"), env);
      if (!mine.other_gpus.empty()) {
        throw InputError(std::string(env) +
                         ": launch.base: a delta (tools/gemm_launch.py --base) needs its base "
                         "GPU's records; $EXMY_GEMM_PROFILE takes one GPU's own records");
      }
      return mine;
    }
    GemmProfile p = parse_gemm_profile(kCublasSm90Profile, "cublaslt-h100-gemm.json");
    merge_gemm_profile(p, parse_gemm_profile(kCublasSm90Launch, "cublaslt-h100-launch.json"));
    merge_gemm_profile(p, parse_gemm_profile(kCublasSm90LaunchH200, "cublaslt-h200-launch.json"));
    return p;
  }();
  return profile;
}

}  // namespace exmy::gemm
