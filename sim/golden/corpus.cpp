// Golden corpora (corpus.hpp, docs/SEMANTICS.md 13.7): the suites, the writer with its manifest,
// the checker and the shard merge.
#include "sim/golden/corpus.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/registry.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/golden/corpus_cases.hpp"
#include "sim/io/build_info.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/sha256.hpp"
#include "sim/optim/registry.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/sample_inputs.hpp"

namespace exmy::golden {
namespace fs = std::filesystem;
using native::Storage;
namespace {

// ---- the suites -----------------------------------------------------------------------------
using detail::bell;
using detail::Case;
using detail::CaseMaker;
using detail::fnv1a;
using detail::uniform_pm1;

// Casts: the OCP / ml_dtypes formats and the IEEE P3109 8-bit signed formats the format core can
// describe (binary8pK, K = 1..7, finite: NaN at 0x80, no infinities, bias 2^(7−K), i.e. eXmY
// fnuz with that bias; P3109's "extended" variants, with ±inf at 0x7F/0xFF beside the NaN at
// 0x80, and its unsigned variants are not describable: section 1's NaN conventions put inf only
// in ieee-style formats).
struct CastFormat {
  const char* label;
  const char* name;
};
constexpr CastFormat kCastFormats[] = {
    {"e4m3fn", "e4m3fn"},
    {"e5m2", "e5m2"},
    {"e4m3fnuz", "e4m3fnuz"},
    {"e5m2fnuz", "e5m2fnuz"},
    {"e4m3", "e4m3"},
    {"e3m4", "e3m4"},
    {"e3m2fn", "e3m2fn"},
    {"e2m3fn", "e2m3fn"},
    {"e2m1fn", "e2m1fn"},
    {"e8m0fnu", "e8m0fnu"},
    {"bf16", "bf16"},
    {"fp16", "fp16"},
    {"p3109-binary8p1", "e7m0b64fnuz"},
    {"p3109-binary8p2", "e6m1b32fnuz"},
    {"p3109-binary8p3", "e5m2b16fnuz"},
    {"p3109-binary8p4", "e4m3b8fnuz"},
    {"p3109-binary8p5", "e3m4b4fnuz"},
    {"p3109-binary8p6", "e2m5b2fnuz"},
    {"p3109-binary8p7", "e1m6b1fnuz"},
};
// The cast cases' roundings: every deterministic mode and sr:8 (the rounding registry's order),
// under each overflow policy in this order.
const std::vector<Rounding>& cast_roundings() {
  static const std::vector<Rounding> v = rounding_sweep({8});
  return v;
}
constexpr Overflow kPolicies[] = {Overflow::none, Overflow::sat, Overflow::satfinite};

// TestFloat-style fp32 inputs for target f: the boundary × pattern table of sim/verify (every
// value of f, its fp32 neighbours, exact midpoints ± 1, 2 ulps, quarter points, the overflow
// threshold, specials, Philox-chosen random patterns) plus 512 uniform random fp32 patterns from
// the generator's seed (printed in the manifest).
std::vector<float> cast_inputs(const FloatFormat& f, std::uint64_t seed) {
  std::vector<float> x;
  for (std::uint64_t code : verify::boundary_inputs(formats::fp32, f, verify::Depth::ci)) {
    const auto u = static_cast<std::uint32_t>(code);
    float v;
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 512; ++i) {
    const auto u = static_cast<std::uint32_t>(rng());
    float v;
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  return x;
}

void cast_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  for (const CastFormat& cf : kCastFormats) {
    const std::string fmt_dir = std::string("cast/") + cf.label;
    for (const Rounding& mode : cast_roundings()) {
      for (const Overflow ov : kPolicies) {
        const std::string round = rounding_name(mode), policy = overflow_name(ov);
        std::string dir = round;  // case paths hold no ':'
        std::erase(dir, ':');
        const std::string id = fmt_dir + "/" + dir + "-" + policy;
        out.push_back({id, [=] {
                         const Format f = parse_format(cf.name);
                         const std::vector<float> x = cast_inputs(f.fp, seed);
                         const Rounding r{mode.mode, mode.sr_bits, ov};
                         const int bytes = f.fp.total_bits() <= 8 ? 1 : 2;
                         std::vector<std::uint8_t> codes(x.size() * bytes);
                         fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(),
                                             codes.data(), f.fp, r, seed, 0, 0);
                         Case c;
                         c.id = id;
                         c.fields = {{"op", "cast"},
                                     {"format", cf.name},
                                     {"round", round},
                                     {"overflow", policy},
                                     {"seed", std::to_string(seed)},
                                     {"inputs", "x"},
                                     {"outputs", "codes"},
                                     {"cli", std::string("exmy cast ") + cf.name +
                                                 " --in x.npy --out codes.npy --round " + round +
                                                 " --overflow " + policy + " --seed " +
                                                 std::to_string(seed)}};
                         c.inputs.push_back({"x", io::make_npy(x)});
                         if (bytes == 1) {
                           c.expected.push_back({"codes", io::make_npy(codes)});
                         } else {
                           std::vector<std::uint16_t> c16(x.size());
                           std::memcpy(c16.data(), codes.data(), codes.size());
                           c.expected.push_back({"codes", io::make_npy(c16)});
                         }
                         return c;
                       }});
      }
    }
  }
}

struct StepCase {
  std::string id;
  std::string optimizer;
  Storage st;
  std::string compat;  // "" = the default
  // A family's extra hyperparameters (flags: 1), as `exmy step` options.
  std::vector<std::pair<std::string, double>> extra = {};
  // The parameters' shape (empty: 1-d); Adafactor factors a 2-d one.
  std::vector<std::size_t> shape = {};
};
// Every optimizer × parameter dtype × --compat profile exmy models (section 9): torch Adam, AdamW
// and SGD under torch-cpu, torch-cuda, torch-cuda-foreach and torch-cuda-fused, on fp32, bf16
// and fp16; the 8-bit optimizers on fp32, bf16 and fp16, by
// default and under bnb-cuda; StableAdamW; the split formats of seed 004.
std::vector<StepCase> step_case_list() {
  std::vector<StepCase> v;
  const std::pair<Storage, const char*> dtypes[] = {
      {Storage::f32, "fp32"}, {Storage::bf16, "bf16"}, {Storage::f16, "fp16"}};
  for (const char* opt : {"adamw", "adam", "sgd"}) {
    for (const auto& [st, dn] : dtypes) {
      for (const char* prof :
           {"torch-cpu", "torch-cuda", "torch-cuda-foreach", "torch-cuda-fused"}) {
        v.push_back({std::string(opt) + "-" + dn + "-" + prof, opt, st,
                     std::string(prof) == "torch-cpu" ? "" : prof});
      }
    }
  }
  for (const char* opt : {"adamw8bit", "adam8bit", "momentum8bit"}) {
    for (const auto& [st, dn] : dtypes) {
      v.push_back({std::string(opt) + "-" + dn, opt, st, ""});
      v.push_back({std::string(opt) + "-" + dn + "-bnb-cuda", opt, st, "bnb-cuda"});
    }
  }
  // torch.optim's second batch (9.2.3-9.2.6): Adagrad, NAdam, RAdam by default and with their
  // options; Adam/AdamW with amsgrad and maximize, on every kernel family.
  const std::pair<const char*, std::vector<std::pair<std::string, double>>> torch2[] = {
      {"adagrad", {}},
      {"adagrad", {{"--lr-decay", 0.1}, {"--initial-accumulator-value", 0.1}, {"--maximize", 1}}},
      {"nadam", {}},
      {"nadam", {{"--momentum-decay", 0.1}, {"--decoupled-wd", 1}, {"--maximize", 1}}},
      {"radam", {}},
      {"radam", {{"--decoupled-wd", 1}, {"--maximize", 1}}}};
  for (const auto& [opt, extra] : torch2) {
    for (const auto& [st, dn] : dtypes) {
      for (const char* prof : {"torch-cpu", "torch-cuda", "torch-cuda-foreach"}) {
        v.push_back({std::string(opt) + (extra.empty() ? "" : "-options") + "-" + dn + "-" + prof,
                     opt, st, std::string(prof) == "torch-cpu" ? "" : prof, extra});
      }
    }
  }
  for (const char* opt : {"adamw", "adam"}) {
    for (const auto& [st, dn] : dtypes) {
      for (const char* prof :
           {"torch-cpu", "torch-cuda", "torch-cuda-foreach", "torch-cuda-fused"}) {
        v.push_back({std::string(opt) + "-amsgrad-maximize-" + dn + "-" + prof,
                     opt,
                     st,
                     std::string(prof) == "torch-cpu" ? "" : prof,
                     {{"--amsgrad", 1}, {"--maximize", 1}}});
      }
    }
  }
  // torch.optim.Adafactor (9.2.8) on the ATen CPU kernels: 1-d (variance) by default, 2-d
  // (row_var, col_var of a 28 x 157 matrix) with its options.
  for (const auto& [st, dn] : dtypes) {
    v.push_back({std::string("adafactor-") + dn, "adafactor", st, ""});
    v.push_back({std::string("adafactor-28x157-options-") + dn,
                 "adafactor",
                 st,
                 "",
                 {{"--beta2-decay", -0.5}, {"--d", 2}, {"--eps1", 1e-30}, {"--maximize", 1}},
                 {28, 157}});
  }
  v.push_back({"stableadamw-fp32", "stableadamw", Storage::f32, ""});
  for (const char* split :
       {"adamw-bf16+8", "adamw-bf16+8:sr", "adamw-fp16+8:sr", "sgd-bf16+8:sr"}) {
    std::string id = split;
    for (char& c : id) {
      if (c == ':' || c == '+') c = '-';
    }
    v.push_back({id, split, Storage::f32, ""});
  }
  return v;
}

// " --lr-decay 0.1 --maximize": the extra hyperparameters as `exmy step` options.
std::string extra_options(const std::vector<std::pair<std::string, double>>& extra) {
  std::string s;
  for (const auto& [name, v] : extra) {
    s += " " + name;
    if (name != "--maximize" && name != "--amsgrad" && name != "--decoupled-wd") {
      char buf[32];
      for (int prec = 1; prec <= 17; ++prec) {  // the shortest text that reads back as v
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
      }
      s += std::string(" ") + buf;
    }
  }
  return s;
}

void step_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  constexpr std::size_t kN = 4096 + 300;  // 8-bit states: two full blocks of 2048 and a partial
  constexpr long kSteps = 5;
  for (const StepCase& sc : step_case_list()) {
    const std::string id = "step/" + sc.id;
    out.push_back(
        {id, [=] {
           optim::Config c;
           c.opt = optim::find_optimizer(sc.optimizer);
           optim::HyperOptions ho;
           ho.extra = sc.extra;
           c.hyper = optim::resolve_hyper(*c.opt.entry, ho);
           c.st = sc.st;
           c.seed = seed;
           c.shape = sc.shape;
           optim::apply_compat(c, sc.compat);  // as `exmy step --compat` and exmy.step
           std::mt19937_64 rng(seed ^ fnv1a(sc.id));
           std::vector<float> p0(kN), g(kN * kSteps);
           for (float& v : p0) v = bell(rng) * 0.1f;
           for (float& v : g) v = bell(rng) * 0.01f;
           // The storage type's values (16-bit parameters and gradients hold exactly).
           if (sc.st != Storage::f32) {
             const FloatFormat& T = sc.st == Storage::bf16 ? formats::bf16 : formats::fp16;
             for (auto* v : {&p0, &g}) {
               std::vector<std::uint16_t> codes(v->size());
               fast::cast_to_codes(v->data(), fast::ArrayInput::fp32, v->size(), codes.data(), T,
                                   Rounding{}, 0, 0, 0);
               const auto& table = fast::decode_table(T);
               for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = table[codes[i]];
             }
           }
           std::vector<float> p = p0;
           optim::State s = optim::init_state(c, p);
           {
             auto stepper = optim::cpu_stepper(c, p, s);
             for (long t = 1; t <= kSteps; ++t) {
               stepper->step(t, std::span<const float>(g).subspan((t - 1) * kN, kN));
             }
             stepper->finish();
           }
           optim::final_params(c, s, p);
           optim::canonical_nans(c, s, p);
           Case cs;
           cs.id = id;
           std::string outputs = "params";
           std::vector<std::pair<std::string, io::NpyArray>> states;
           for (const optim::StateArray& a : c.opt.entry->arrays(c, s)) {
             io::NpyArray arr = std::visit([](auto* vec) { return io::make_npy(*vec); }, a.data);
             if (!a.shape.empty()) arr.shape = a.shape;  // row_var (R, 1), col_var (1, C)
             states.push_back({a.file, std::move(arr)});
             outputs += std::string(",") + a.file;
           }
           cs.fields = {
               {"op", "step"},
               {"optimizer", sc.optimizer},
               {"param_dtype", std::string(optim::dtype_name(sc.st))},
               {"compat", sc.compat.empty() ? std::string("default") : sc.compat},
               {"steps", std::to_string(kSteps)},
               {"seed", std::to_string(seed)},
               {"inputs", "params,grads"},
               {"outputs", outputs},
               {"cli",
                std::string("exmy step --optimizer ") + sc.optimizer +
                    " --params params.npy --grads grads.npy --steps " + std::to_string(kSteps) +
                    " --param-dtype " + std::string(optim::dtype_name(sc.st)) +
                    (sc.compat.empty() ? std::string() : " --compat " + sc.compat) +
                    extra_options(sc.extra) + " --seed " + std::to_string(seed) + " --out out"}};
           std::vector<std::size_t> pshape = sc.shape.empty() ? std::vector{kN} : sc.shape;
           std::vector<std::size_t> gshape{static_cast<std::size_t>(kSteps)};
           gshape.insert(gshape.end(), pshape.begin(), pshape.end());
           cs.inputs.push_back({"params", io::make_npy(p0, pshape)});
           cs.inputs.push_back({"grads", io::make_npy(g, gshape)});
           cs.expected.push_back({"params", io::make_npy(p, pshape)});
           for (auto& st : states) cs.expected.push_back(std::move(st));
           return cs;
         }});
  }
}

std::vector<CaseMaker> all_cases(const std::string& suite, std::uint64_t seed) {
  std::vector<CaseMaker> v;
  const bool all = suite == "all" || suite == "default";
  if (all || suite == "cast") cast_cases(seed, v);
  if (all || suite == "quantize") {
    quant_cases(seed, v);
    bnb4_cases(seed, v);
  }
  if (all || suite == "step") step_cases(seed, v);
  if (v.empty()) {
    throw InputError("--suite '" + suite + "': expected cast, quantize, step or all");
  }
  return v;
}

// ---- files ----------------------------------------------------------------------------------
std::string flat_json(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s = "{\n";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    s += "  " + io::json_string(fields[i].first) + ": " + io::json_string(fields[i].second);
    s += i + 1 < fields.size() ? ",\n" : "\n";
  }
  return s + "}\n";
}

// sha256 over the sorted "hash  path" lines: identifies the corpus contents, whatever built it.
std::string content_hash(const std::map<std::string, std::string>& files) {
  std::string lines;
  for (const auto& [path, hash] : files) lines += hash + "  " + path + "\n";
  return io::sha256_hex(lines);
}

std::string manifest_text(const GenerateOptions& opt,
                          const std::map<std::string, std::string>& files, std::size_t cases,
                          const std::string& shard_text, const std::string& suite) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"corpus", "exmy-golden"},          {"corpus_version", std::to_string(kCorpusVersion)},
      {"exmy_version", EXMY_VERSION},     {"semantics_revision", kSemanticsRevision},
      {"git_sha", exmy::build_git_sha()}, {"suite", suite},
      {"seed", std::to_string(opt.seed)}, {"shard", shard_text},
      {"cases", std::to_string(cases)},   {"corpus_sha256", content_hash(files)}};
  for (const auto& [path, hash] : files) f.push_back({"file:" + path, hash});
  return flat_json(f);
}

void mkdirs(const fs::path& p) {
  io::ensure_output_directory(p.string(), "the corpus directory");  // sim/io/files.hpp's rule
}

// The "file:<path>" fields of a manifest; a path leaving the corpus is refused.
std::map<std::string, std::string> manifest_files(const io::FlatJson& m) {
  std::map<std::string, std::string> files;
  for (const auto& [key, v] : m.fields()) {
    if (key.rfind("file:", 0) != 0) continue;
    const std::string rel = key.substr(5);
    if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos) {
      throw InputError(m.source() + ": file entry '" + rel + "' leaves the corpus directory");
    }
    if (v.kind != io::JsonValue::Kind::string || v.text.size() != 64) {
      throw InputError(m.source() + ": file entry '" + rel + "': expected a sha256 hex digest");
    }
    files[rel] = v.text;
  }
  return files;
}

io::FlatJson read_json(const std::string& path, const std::string& what) {
  return io::FlatJson(io::read_small_file(path, std::size_t{64} << 20, what), path);
}

io::FlatJson read_manifest(const std::string& corpus) {
  const std::string path = (fs::path(corpus) / "manifest.json").string();
  io::FlatJson m = read_json(path, "a golden corpus manifest (exmy golden generate)");
  if (!m.has("corpus") || m.str("corpus") != "exmy-golden") {
    throw InputError(path +
                     ": not an exmy golden corpus manifest (expected \"corpus\": \"exmy-golden\")");
  }
  const auto v = number::parse_u64(m.str("corpus_version"), path + ": corpus_version", 1000000);
  if (v != static_cast<std::uint64_t>(kCorpusVersion)) {
    throw InputError(path + ": corpus version " + std::to_string(v) + ", this exmy reads version " +
                     std::to_string(kCorpusVersion) +
                     " (regenerate it with this exmy: exmy golden generate --out DIR --seed " +
                     (m.has("seed") ? m.str("seed") : std::string("S")) +
                     ", then rerun your kernel on its inputs; docs/SEMANTICS.md 13.7)");
  }
  return m;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) v.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return v;
}

std::string hex_of(const io::NpyArray& a, std::size_t i) {
  const std::size_t w = a.item_size();
  std::uint64_t u = 0;
  std::memcpy(&u, a.data.data() + i * w, std::min<std::size_t>(w, 8));
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, static_cast<int>(2 * w), u);
  return buf;
}
// "(0.001953125, subnormal)": a code of a float format of at most 16 bits as its value.
std::string code_value_text(const FloatFormat& f, const io::NpyArray& a, std::size_t i) {
  std::uint64_t u = 0;
  std::memcpy(&u, a.data.data() + i * a.item_size(), a.item_size());
  u &= f.total_bits() >= 64 ? ~0ull : (1ull << f.total_bits()) - 1;
  char buf[64];
  std::snprintf(buf, sizeof buf, "(%.9g, %s)", static_cast<double>(fast::decode_table(f)[u]),
                class_name(f.classify(u)));
  return buf;
}
// "(0.000976562616, normal)": an fp32 input element as its value.
std::string f32_value_text(const io::NpyArray& a, std::size_t i) {
  std::uint32_t u;
  std::memcpy(&u, a.data.data() + i * 4, 4);
  float v;
  std::memcpy(&v, &u, 4);
  char buf[64];
  std::snprintf(buf, sizeof buf, "(%.9g, %s)", static_cast<double>(v),
                class_name(formats::fp32.classify(u)));
  return buf;
}
bool same_element(const io::NpyArray& e, const io::NpyArray& g, std::size_t i, bool strict_nan) {
  const std::size_t w = e.item_size();
  if (std::memcmp(e.data.data() + i * w, g.data.data() + i * w, w) == 0) return true;
  if (strict_nan) return false;
  auto nan = [&](const io::NpyArray& a) {
    if (a.descr == "<f4") {
      std::uint32_t u;
      std::memcpy(&u, a.data.data() + i * 4, 4);
      return (u & 0x7FFFFFFFu) > 0x7F800000u;
    }
    if (a.descr == "<f8") {
      std::uint64_t u;
      std::memcpy(&u, a.data.data() + i * 8, 8);
      return (u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    }
    return false;
  };
  return nan(e) && nan(g);
}

}  // namespace

std::vector<std::string> suite_names() {
  return {"cast", "quantize", "step"};
}

GenerateResult generate(const GenerateOptions& opt) {
  if (opt.out.empty()) throw InputError("--out: expected the corpus directory");
  const std::vector<CaseMaker> makers = all_cases(opt.suite, opt.seed);
  mkdirs(opt.out);
  // Stage into a directory beside the corpus, then move the finished tree in.
  io::StagingDir stage(opt.out);
  const fs::path root = stage.path();
  std::map<std::string, std::string> files;
  std::size_t cases = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double next_print = 1.0;
  for (std::size_t k = 0; k < makers.size(); ++k) {
    if (k < opt.shard.begin(makers.size()) || k >= opt.shard.end(makers.size())) continue;
    const Case c = makers[k].make();
    // Every name is portable (letters, digits, '-', '_', '.', and '/' between suite and case):
    // a maker that breaks the rule is exmy's bug, found here rather than by a user's CI.
    for (const char ch : c.id) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.' &&
          ch != '/') {
        throw std::logic_error("golden case name '" + c.id + "' is not portable");
      }
    }
    const fs::path dir = root / c.id;
    mkdirs(dir / "expected");
    auto put_text = [&](const std::string& rel, const std::string& text) {
      io::write_text_atomic((root / rel).string(), text);
      files[rel] = io::sha256_hex(text);
    };
    auto put_npy = [&](const std::string& rel, const io::NpyArray& a) {
      io::write_npy((root / rel).string(), a);
      files[rel] = io::sha256_file((root / rel).string());
    };
    put_text(c.id + "/case.json", flat_json(c.fields));
    for (const auto& [name, a] : c.inputs) put_npy(c.id + "/" + name + ".npy", a);
    for (const auto& [name, a] : c.expected) put_npy(c.id + "/expected/" + name + ".npy", a);
    ++cases;
    if (opt.progress) {  // at most once a second, with an ETA
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s >= next_print) {
        next_print = s + 1.0;
        const double eta =
            s / static_cast<double>(k + 1) * static_cast<double>(makers.size() - k - 1);
        std::fprintf(stderr, "\r[golden] %zu/%zu cases  %.0fs  ETA %.0fs ", k + 1, makers.size(), s,
                     eta);
      }
    }
  }
  if (opt.progress) std::fprintf(stderr, "\r[golden] %zu cases written\n", cases);
  const std::string shard_text = opt.shard.text();
  const std::string manifest_name = opt.shard.whole()
                                        ? "manifest.json"
                                        : "manifest-shard-" + std::to_string(opt.shard.index) +
                                              "-of-" + std::to_string(opt.shard.count) + ".json";
  // One suite written over a whole corpus keeps the corpus's other suites: their files stay on
  // disk and their manifest entries are carried over (a corpus of another seed is refused, as
  // its cases would no longer follow from the recorded seed).
  std::map<std::string, std::string> listed = files;
  std::string suite_text = opt.suite;
  std::size_t listed_cases = cases;
  const bool one_suite = opt.suite != "all" && opt.suite != "default";
  if (one_suite && opt.shard.whole() && fs::exists(fs::path(opt.out) / "manifest.json")) {
    const io::FlatJson old = read_manifest(opt.out);
    if (old.str("seed") != std::to_string(opt.seed)) {
      throw InputError("--out '" + opt.out + "': holds a corpus of seed " + old.str("seed") +
                       ", not " + std::to_string(opt.seed) +
                       " (expected the same --seed to regenerate one suite of it, or a fresh "
                       "directory)");
    }
    std::set<std::string> suites = {opt.suite};
    for (const auto& [rel, hash] : manifest_files(old)) {
      const std::string suite = rel.substr(0, rel.find('/'));
      if (suite == opt.suite) continue;
      listed.emplace(rel, hash);
      suites.insert(suite);
      const std::string tail = "/case.json";
      if (rel.size() > tail.size() && rel.compare(rel.size() - tail.size(), tail.size(), tail) == 0)
        ++listed_cases;
    }
    suite_text.clear();
    for (const std::string& name : suite_names()) {
      if (suites.count(name)) suite_text += (suite_text.empty() ? "" : ",") + name;
    }
    if (suites.size() == suite_names().size()) suite_text = "all";
  }
  io::write_text_atomic((root / manifest_name).string(),
                        manifest_text(opt, listed, listed_cases, shard_text, suite_text));
  // Move the staged tree into place: every file, the manifest last.
  io::OutputSet outs;
  std::vector<std::string> rels;
  for (const auto& [rel, hash] : files) rels.push_back(rel);
  rels.push_back(manifest_name);
  for (const std::string& rel : rels) {
    mkdirs((fs::path(opt.out) / rel).parent_path());
    outs.adopt((root / rel).string(), (fs::path(opt.out) / rel).string());
  }
  outs.commit();
  GenerateResult r;
  r.cases = listed_cases;
  r.files = listed.size();
  r.corpus_sha256 = content_hash(listed);
  r.manifest_path = (fs::path(opt.out) / manifest_name).string();
  return r;
}

CheckReport check(const CheckOptions& opt) {
  const io::FlatJson m = read_manifest(opt.corpus);
  const std::map<std::string, std::string> files = manifest_files(m);
  // Every corpus file against its hash, and the corpus hash against the files.
  for (const auto& [rel, hash] : files) {
    const std::string path = (fs::path(opt.corpus) / rel).string();
    const std::string got = io::sha256_file(path);
    if (got != hash) {
      throw InputError("corrupted corpus file '" + path + "': sha256 " + got + ", manifest says " +
                       hash);
    }
  }
  if (m.str("corpus_sha256") != content_hash(files)) {
    throw InputError((fs::path(opt.corpus) / "manifest.json").string() +
                     ": corpus_sha256 does not match its file list (edited manifest)");
  }
  const bool all = opt.suite == "all" || opt.suite == "default";
  CheckReport report;
  for (const auto& [rel, hash] : files) {
    const std::string tail = "/case.json";
    if (rel.size() <= tail.size() ||
        rel.compare(rel.size() - tail.size(), tail.size(), tail) != 0) {
      continue;
    }
    const std::string id = rel.substr(0, rel.size() - tail.size());
    if (!all && id.rfind(opt.suite + "/", 0) != 0) continue;
    const io::FlatJson c = read_json((fs::path(opt.corpus) / rel).string(), "a case.json");
    CaseReport cr;
    cr.id = id;
    // Operands for the report: the case's input "x" when it has one per output element.
    std::unique_ptr<io::NpyArray> x;
    if (c.str("inputs") == "x") {
      x = std::make_unique<io::NpyArray>(
          io::read_npy((fs::path(opt.corpus) / id / "x.npy").string()));
    }
    // A cast case's codes are also reported as values with their class (the case's format).
    std::unique_ptr<Format> fmt;
    if (c.str("op") == "cast" && c.has("format")) {
      Format f = parse_format(c.str("format"));
      if (f.kind == FormatKind::floating && f.fp.total_bits() <= 16)
        fmt = std::make_unique<Format>(std::move(f));
    }
    for (const std::string& name : split_list(c.str("outputs"))) {
      const std::string epath = (fs::path(opt.corpus) / id / "expected" / (name + ".npy")).string();
      const std::string rpath = (fs::path(opt.results) / id / (name + ".npy")).string();
      if (!fs::exists(rpath)) {
        cr.missing = true;
        continue;
      }
      const io::NpyArray e = io::read_npy(epath);
      const io::NpyArray g = io::read_npy(rpath);
      if (g.descr != e.descr || g.count() != e.count()) {
        throw InputError("'" + rpath + "': expected dtype " + e.descr + " with " +
                         std::to_string(e.count()) + " elements (as " + epath + "), got " +
                         g.descr + " with " + std::to_string(g.count()));
      }
      for (std::size_t i = 0; i < e.count(); ++i) {
        ++cr.checks;
        if (same_element(e, g, i, opt.strict_nan)) continue;
        ++cr.mismatches;
        if (cr.first.size() < opt.max_reported) {
          const bool codes = fmt && name == "codes" && e.item_size() <= 2;
          std::string line = name + "[" + std::to_string(i) + "]: expected " + hex_of(e, i) +
                             (codes ? " " + code_value_text(fmt->fp, e, i) : "") + ", got " +
                             hex_of(g, i) + (codes ? " " + code_value_text(fmt->fp, g, i) : "");
          if (x && x->count() == e.count() && !c.has("args")) {
            line += " (x = " + hex_of(*x, i) +
                    (x->descr == "<f4" ? " " + f32_value_text(*x, i) : "") + ")";
          }
          cr.first.push_back(line);
        }
      }
    }
    report.checks += cr.checks;
    report.mismatches += cr.mismatches;
    report.missing += cr.missing ? 1 : 0;
    report.cases.push_back(std::move(cr));
  }
  if (report.cases.empty()) {
    throw InputError("--suite '" + opt.suite + "': the corpus has no case of it");
  }
  return report;
}

std::vector<CaseInfo> list_cases(const std::string& corpus, const std::string& suite) {
  const io::FlatJson m = read_manifest(corpus);
  const bool all = suite == "all" || suite == "default";
  std::vector<CaseInfo> out;
  for (const auto& [rel, hash] : manifest_files(m)) {
    const std::string tail = "/case.json";
    if (rel.size() <= tail.size() ||
        rel.compare(rel.size() - tail.size(), tail.size(), tail) != 0) {
      continue;
    }
    CaseInfo ci;
    ci.id = rel.substr(0, rel.size() - tail.size());
    if (!all && ci.id.rfind(suite + "/", 0) != 0) continue;
    ci.dir = (fs::path(corpus) / ci.id).string();
    const io::FlatJson c = read_json((fs::path(corpus) / rel).string(), "a case.json");
    ci.op = c.str("op");
    if (c.has("format")) ci.format = c.str("format");
    if (c.has("round")) ci.round = c.str("round");
    if (c.has("overflow")) ci.overflow = c.str("overflow");
    ci.seed = number::parse_u64(c.str("seed"), rel + ": seed", ~std::uint64_t{0});
    out.push_back(std::move(ci));
  }
  return out;
}

GenerateResult merge(const std::string& dir) {
  std::map<std::string, std::string> files;
  std::size_t cases = 0;
  std::uint64_t count = 0;
  std::vector<std::pair<std::string, std::string>> generator;  // fields every shard must share
  std::vector<bool> seen;
  std::error_code dir_ec;
  fs::directory_iterator entries(dir, dir_ec);
  if (dir_ec) {
    throw InputError("'" + dir + "': cannot list the directory (" + dir_ec.message() +
                     "; expected the corpus directory holding the shard manifests)");
  }
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    unsigned long long i = 0, n = 0;
    char tail[8] = {};
    if (std::sscanf(name.c_str(), "manifest-shard-%llu-of-%llu.jso%1s", &i, &n, tail) != 3 ||
        name != "manifest-shard-" + std::to_string(i) + "-of-" + std::to_string(n) + ".json") {
      continue;
    }
    if (n == 0 || i >= n || n > (std::uint64_t{1} << 20)) {
      throw InputError("'" + entry.path().string() + "': shard " + std::to_string(i) + " of " +
                       std::to_string(n) +
                       " (expected shard i of N with i < N and 1 <= N <= 1048576, as --shard)");
    }
    if (count != 0 && n != count) {
      throw InputError("'" + entry.path().string() + "': shard " + std::to_string(i) + " of " +
                       std::to_string(n) + " does not fit the other shards (of " +
                       std::to_string(count) + ")");
    }
    count = n;
    seen.resize(n);
    seen[i] = true;
    const io::FlatJson m = io::FlatJson(
        io::read_small_file(entry.path().string(), std::size_t{64} << 20, "a shard manifest"),
        entry.path().string());
    std::vector<std::pair<std::string, std::string>> g;
    for (const char* k : {"corpus", "corpus_version", "exmy_version", "semantics_revision",
                          "git_sha", "suite", "seed"}) {
      g.push_back({k, m.str(k)});
    }
    if (!generator.empty() && g != generator) {
      throw InputError("'" + entry.path().string() +
                       "': written by another generator than the "
                       "other shards (version, SHA, suite or seed differ)");
    }
    generator = g;
    for (const auto& [rel, hash] : manifest_files(m)) files[rel] = hash;
    cases +=
        number::parse_u64(m.str("cases"), entry.path().string() + ": cases", ~std::uint64_t{0});
  }
  if (count == 0) throw InputError("'" + dir + "': no manifest-shard-I-of-N.json to merge");
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!seen[i]) {
      throw InputError("'" + dir + "': shard " + std::to_string(i) + " of " +
                       std::to_string(count) + " is missing (manifest-shard-" + std::to_string(i) +
                       "-of-" + std::to_string(count) + ".json)");
    }
  }
  std::vector<std::pair<std::string, std::string>> f = generator;
  f.push_back({"shard", "merged from " + std::to_string(count)});
  f.push_back({"cases", std::to_string(cases)});
  f.push_back({"corpus_sha256", content_hash(files)});
  for (const auto& [rel, hash] : files) f.push_back({"file:" + rel, hash});
  io::write_text_atomic((fs::path(dir) / "manifest.json").string(), flat_json(f));
  GenerateResult r;
  r.cases = cases;
  r.files = files.size();
  r.corpus_sha256 = content_hash(files);
  r.manifest_path = (fs::path(dir) / "manifest.json").string();
  return r;
}

}  // namespace exmy::golden
