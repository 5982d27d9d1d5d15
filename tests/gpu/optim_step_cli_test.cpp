// `exmy step --device cuda` against `--device cpu` (docs/SEMANTICS.md 9.9, 11.5): for every
// registry entry and every parameter dtype its GPU column names, several steps with per-step
// gradients, partial last 8-bit blocks (n = 70001; n = 1000 < 4096 both as the 32-bit fallback
// and with --no-small-fallback), the named variants, loss scaling with a skipped step, and a run
// continued from a saved state: every output file must be byte-identical, NaNs included (the
// step's NaNs are made canonical, 9.1; Adam with fp16 parameters makes NaN where eps rounds to 0
// in fp16 and v underflows, which found it). A dtype the GPU does not support exits 2 and writes
// nothing.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/io/npy.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

using testing::cli;
using testing::exists;
using testing::file_bytes;

using testing::run;

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.insert(n);
    }
    closedir(d);
  }
  return out;
}

// Deterministic finite values of magnitude ~scale, rounded to the parameter dtype.
std::vector<float> values(std::size_t n, std::uint32_t seed, float scale, optim::Storage st) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 12345u;
  for (auto& y : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    const float u = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;  // [-0.5, 0.5)
    y = native::to_storage(u * scale * 4.0f, st);
  }
  return v;
}

// EXMY_TEST_SHARD=i/N runs only the registry entries k with k % N == i, so that N processes share
// the test (about 400 CPU/GPU run pairs in all, each starting a CUDA context: ~4 min in one).
bool in_shard(std::size_t k) {
  const char* v = std::getenv("EXMY_TEST_SHARD");
  if (v == nullptr || *v == 0) return true;
  unsigned long i = 0, n = 1;
  if (std::sscanf(v, "%lu/%lu", &i, &n) != 2 || n == 0 || i >= n) {
    FAIL("EXMY_TEST_SHARD '" << v << "': expected i/N with 0 <= i < N");
  }
  return k % n == i;
}

// EXMY_TEST_ONLY=a,b,... runs only the registry entries of those names (a device call that
// changed one kernel reruns its optimizers).
bool in_only(std::string_view name) {
  const char* v = std::getenv("EXMY_TEST_ONLY");
  if (v == nullptr || *v == 0) return true;
  const std::string list = std::string(",") + v + ",";
  return list.find("," + std::string(name) + ",") != std::string::npos;
}

// Runs `args` on the CPU and on the GPU and compares every output file byte for byte.
void same_files(const std::string& d, const std::string& label, const std::string& args) {
  INFO(label << ": " << args);
  const std::string cpu = d + "/cpu_" + label, gpu = d + "/gpu_" + label;
  REQUIRE(run("step " + args + " --device cpu --out " + cpu) == 0);
  REQUIRE(run("step " + args + " --device cuda --out " + gpu) == 0);
  const std::set<std::string> fc = files_in(cpu), fg = files_in(gpu);
  CHECK(fc == fg);
  CHECK(fc.count("params.npy") == 1);
  CHECK(fc.count("state.json") == 1);
  for (const std::string& f : fc) {
    INFO(f);
    const bool same = file_bytes(cpu + "/" + f) == file_bytes(gpu + "/" + f);
    CHECK(same);
  }
}

}  // namespace

TEST_CASE("exmy step --device cuda writes the CPU's bytes for every optimizer and dtype",
          "[gpu][optim][cli]") {
  if (cli().empty()) FAIL("exmy not found: set EXMY_CLI to the exmy executable");
  char tmpl[] = "/tmp/exmy_gpu_step_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string d = tmpl;
  const std::size_t steps = 3;
  int label = 0;
  std::size_t entry = 0;
  for (const auto& e : optim::optimizers()) {
    if (!in_shard(entry++) || !in_only(e.name)) continue;
    // Split entries: the example plus formats covering bf16/fp16, k = 0, 8, 16 and :sr.
    std::vector<std::string> names{std::string(e.example)};
    if (e.split) {
      const std::string pre(e.name.substr(0, e.name.size() - 3));
      for (const char* f :
           {"bf16+16", "bf16+0", "bf16+8:sr", "fp16+13", "fp16+8", "e5m2+8", "e5m2+21:sr"}) {
        names.push_back(pre + f);
      }
    }
    for (const auto st : {optim::Storage::f32, optim::Storage::bf16, optim::Storage::f16}) {
      const std::string dt(optim::dtype_name(st));
      const bool blockwise = optim::is_blockwise(e);
      // AdEMAMix8bit under bnb-cuda needs a multiple of 256 (SEMANTICS 9.4.2): 70144 = 274·256.
      std::vector<std::size_t> sizes{e.family == optim::Family::ademamix ? 70144u : 70001u, 1000};
      for (const std::size_t n : sizes) {
        const std::string base = d + "/" + dt + "_" + std::to_string(n);
        if (!exists(base + "_p.npy")) {
          io::write_npy(base + "_p.npy", io::make_npy(values(n, 1 + n, 1.0f, st)));
          io::write_npy(
              base + "_g.npy",
              io::make_npy(values(n * steps, 2 + n, 1e-2f, optim::Storage::f32), {steps, n}));
        }
        for (const std::string& name : names) {
          const std::string common = "--optimizer " + name + " --param-dtype " + dt + " --params " +
                                     base + "_p.npy --grads " + base + "_g.npy --steps " +
                                     std::to_string(steps) + " --lr 0.01 --seed 5";
          if (!e.gpu[static_cast<int>(st)]) {
            // Not on the GPU: exit 2, nothing written.
            const std::string out = d + "/refused" + std::to_string(label++);
            CHECK(run("step " + common + " --device cuda --out " + out) == 2);
            CHECK_FALSE(exists(out));
            continue;
          }
          same_files(d, std::to_string(label++), common);
          // bitsandbytes 0.50.2 has no bf16 32-bit RMSprop/Adagrad: bnb-cuda refuses it (9.4.1).
          const bool bnb_refuses = e.family == optim::Family::bnb1 &&
                                   e.bnb_op != native::Bnb1Op::lion && st == optim::Storage::bf16 &&
                                   (e.state32 || n < 4096);
          if (blockwise && !bnb_refuses) {
            // bitsandbytes' kernels as compiled (SEMANTICS 9.4), every parameter dtype
            same_files(d, std::to_string(label++), common + " --compat bnb-cuda");
            same_files(d, std::to_string(label++), common + " --compat bnb-cuda --wd 0.1");
          }
          if (blockwise) {
            same_files(d, std::to_string(label++), common + " --block 2048");
            same_files(d, std::to_string(label++), common + " --no-small-fallback");
            same_files(d, std::to_string(label++), common + " --no-small-fallback --block 2048");
          }
          if ((e.family == optim::Family::bnb1 || e.family == optim::Family::ademamix) &&
              e.state32 && !bnb_refuses) {
            // the *32bit optimizers: kOptimizer32bit1State/2State as compiled (SEMANTICS 9.4.1-2).
            // AdEMAMix32bit under bnb-cuda has no defined result (bitsandbytes #2075: m2 past the
            // end of state1): refused unless --variant double-buffer, AdEMAMix(optim_bits=32).
            std::string bnb = " --compat bnb-cuda";
            if (e.family == optim::Family::ademamix) {
              const std::string out = d + "/refused" + std::to_string(label++);
              CHECK(run("step " + common + bnb + " --device cuda --out " + out) == 2);
              CHECK_FALSE(exists(out));
              bnb += " --variant double-buffer";
            }
            same_files(d, std::to_string(label++), common + bnb);
            same_files(d, std::to_string(label++), common + bnb + " --wd 0.1");
          }
          if (e.variants.size() > 0) {
            same_files(d, std::to_string(label++),
                       common + " --variant " + std::string(e.variants));
          }
          if (!e.split && e.family != optim::Family::stable) {
            // Only options the optimizer reads (others are refused: sim/optim/hyper_applies.hpp).
            const std::string extra = e.family == optim::Family::sgd ? " --momentum 0.5 --nesterov"
                                      : e.family == optim::Family::momentum8 ? " --momentum 0.5"
                                                                             : "";
            same_files(d, std::to_string(label++), common + " --wd 0.1" + extra);
          }
          if (!e.split && !e.def->extras.empty()) {
            // The family's extra hyperparameters all on (--amsgrad --maximize, --lr-decay 0.1
            // --initial-accumulator-value 0.1, --momentum-decay 0.1 --decoupled-wd, --centered)
            // under every torch profile that covers it (SEMANTICS 9.2.1-9.2.6)
            std::string all = " --wd 0.1";
            for (const optim::ExtraHyper& x : e.def->extras) {
              all += " " + std::string(x.option) + (x.flag ? "" : " 0.1");
            }
            const char* profiles[] = {"torch-cpu", "torch-cuda", "torch-cuda-foreach",
                                      "torch-cuda-fused"};
            for (unsigned k = 0; k < 4; ++k) {
              if ((e.def->torch_kernels >> k & 1u) == 0) continue;
              same_files(d, std::to_string(label++),
                         common + all + " --compat " + std::string(profiles[k]));
            }
          }
          if (e.family == optim::Family::adam || e.family == optim::Family::sgd) {
            // torch's fused=True kernels (SEMANTICS 9.2, 9.3), every parameter dtype
            same_files(d, std::to_string(label++), common + " --compat torch-cuda-fused");
            same_files(d, std::to_string(label++),
                       common + " --compat torch-cuda-fused --wd 0.1" +
                           (e.family == optim::Family::sgd ? " --momentum 0.5 --nesterov" : ""));
          }
        }
      }
    }
  }
  std::system(("rm -rf " + d).c_str());
}

TEST_CASE("exmy step --device cuda: saved states, loss scaling, skipped steps",
          "[gpu][optim][cli]") {
  if (cli().empty()) FAIL("exmy not found: set EXMY_CLI to the exmy executable");
  char tmpl[] = "/tmp/exmy_gpu_step_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string d = tmpl;
  const std::size_t n = 5000, steps = 4;
  io::write_npy(d + "/p.npy", io::make_npy(values(n, 3, 1.0f, optim::Storage::bf16)));
  // Step 2 of 4 has an inf gradient: the dynamic scaler skips it (and backs off).
  std::vector<float> g = values(n * steps, 4, 1e-2f, optim::Storage::f32);
  g[n * 1 + 17] = INFINITY;
  io::write_npy(d + "/g.npy", io::make_npy(g, {steps, n}));
  io::write_npy(d + "/g1.npy", io::make_npy(values(n, 5, 1e-2f, optim::Storage::f32)));
  std::vector<float> ginf = values(n, 6, 1e-2f, optim::Storage::f32);
  ginf[n - 1] = -INFINITY;
  io::write_npy(d + "/ginf.npy", io::make_npy(ginf));
  int label = 0;
  std::size_t entry = 0;
  for (const auto& e : optim::optimizers()) {
    if (!in_shard(entry++)) continue;
    const std::string name(e.example);
    for (const char* dt : {"fp32", "bf16"}) {
      const auto st = std::string(dt) == "bf16" ? optim::Storage::bf16 : optim::Storage::f32;
      if (!e.gpu[static_cast<int>(st)]) continue;
      const std::string common = "--optimizer " + name + " --param-dtype " + dt + " --seed 9";
      for (const char* ls : {"dynamic", "fixed:1024"}) {
        same_files(d, "ls" + std::to_string(label++),
                   common + " --params " + d + "/p.npy --grads " + d + "/g.npy --steps 4" +
                       " --loss-scale " + ls);
      }
      // Every step skipped: the files are the inputs, on both engines.
      same_files(d, "skip" + std::to_string(label++),
                 common + " --params " + d + "/p.npy --grads " + d + "/ginf.npy --steps 2" +
                     " --loss-scale fixed:8");
      // Continue a CPU-saved state on either engine. The first run's inf gradient (step 2, no
      // loss scaling) leaves NaN in the state: the engines' NaN bits differ (x86 0xFFC00000, CUDA
      // 0x7FFFFFFF) until canonical_nans (SEMANTICS 9.1); this case found it on an H100.
      const std::string first = d + "/first" + std::to_string(label++);
      REQUIRE(run("step " + common + " --params " + d + "/p.npy --grads " + d +
                  "/g.npy --steps 4 --out " + first) == 0);
      same_files(d, "cont" + std::to_string(label++),
                 common + " --params " + first + "/params.npy --state " + first + " --grads " + d +
                     "/g1.npy --steps 2");
    }
  }
  std::system(("rm -rf " + d).c_str());
}

TEST_CASE("exmy step --device cuda: 8-bit Adam and AdEMAMix over several grid-stride blocks",
          "[gpu][optim][cli]") {
  // The vectorised 8-bit kernels keep at most a few CTAs per SM resident and loop over the
  // blocks (gpu/optim/bnb8_kernels.cuh block_grid): 70144 parameters are one pass, 2^21 (8192
  // blocks of 256) two or more on a 132-SM device, so the loop's later passes (AdEMAMix's L2
  // prefetch of the next block among them) meet the CPU's bytes here.
  if (cli().empty()) FAIL("exmy not found: set EXMY_CLI to the exmy executable");
  char tmpl[] = "/tmp/exmy_gpu_step_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string d = tmpl;
  const std::size_t n = std::size_t{1} << 21, steps = 2;
  int label = 0;
  for (const char* name : {"adamw8bit", "ademamix8bit"}) {
    if (!in_only(name)) continue;
    for (const auto st : {optim::Storage::f32, optim::Storage::bf16}) {
      const std::string dt(optim::dtype_name(st));
      const std::string base = d + "/" + dt;
      if (!exists(base + "_p.npy")) {
        io::write_npy(base + "_p.npy", io::make_npy(values(n, 7, 1.0f, st)));
        io::write_npy(base + "_g.npy",
                      io::make_npy(values(n * steps, 8, 1e-2f, optim::Storage::f32), {steps, n}));
      }
      const std::string common = "--optimizer " + std::string(name) + " --param-dtype " + dt +
                                 " --params " + base + "_p.npy --grads " + base +
                                 "_g.npy --steps " + std::to_string(steps) + " --lr 0.01 --seed 5";
      // 16-bit parameters take the vectorised kernel only under bnb-cuda.
      if (st == optim::Storage::f32) same_files(d, "gs" + std::to_string(label++), common);
      same_files(d, "gs" + std::to_string(label++), common + " --compat bnb-cuda --wd 0.1");
    }
  }
  std::system(("rm -rf " + d).c_str());
}
