// The optimizer registry (docs/SEMANTICS.md 9.9): every name reaches `exmy step` and `exmy
// memory`, the usage texts list exactly the registry's names, the defaults are the libraries',
// `--device cuda` without a GPU exits 2 and writes nothing, and `exmy memory` no longer accepts
// names that are not optimizers (regression: it took `momentum` silently).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gpu/common/runtime.hpp"
#include "optim_test_util.hpp"
#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/memory.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

using testing::cli;
using testing::exists;
using testing::run;

std::string tmpdir() {
  const std::string d = testing::make_tmpdir("exmy_registry");
  REQUIRE(!d.empty());
  return d;
}

std::string read_text(const std::string& path) {
  return testing::slurp(path);
}

// The comma-separated names after `lead` up to `stop` in `text`.
std::set<std::string> listed(const std::string& text, const std::string& lead,
                             const std::string& stop) {
  const auto b = text.find(lead);
  REQUIRE(b != std::string::npos);
  const auto e = text.find(stop, b);
  REQUIRE(e != std::string::npos);
  std::set<std::string> out;
  std::stringstream ss(text.substr(b + lead.size(), e - b - lead.size()));
  std::string name;
  while (std::getline(ss, name, ',')) {
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    out.insert(name);
  }
  return out;
}

std::set<std::string> registry_names() {
  std::set<std::string> out;
  for (const auto& e : optim::optimizers()) out.insert(std::string(e.name));
  return out;
}

}  // namespace

TEST_CASE("registry: names resolve to their entries, one entry per name", "[optim][registry]") {
  std::set<std::string> seen;
  for (const auto& e : optim::optimizers()) {
    INFO(e.name);
    CHECK(seen.insert(std::string(e.name)).second);
    const optim::Selected s = optim::find_optimizer(e.example);
    CHECK(s.entry == &e);
    CHECK(s.name == e.example);
    if (!e.split) CHECK(e.example == e.name);
  }
  // The split entries are families of names: prefix + a section-6 format.
  const optim::Selected a = optim::find_optimizer("adamw-fp16+13:sr");
  CHECK(a.entry->name == "adamw-FMT");
  CHECK(a.split.hi == optim::Storage::f16);
  CHECK(a.split.k == 13);
  CHECK(a.split.sr);
  CHECK(optim::find_optimizer("adam-bf16+0").entry->name == "adam-FMT");
  CHECK(optim::find_optimizer("sgd-bf16+16").entry->name == "sgd-FMT");
  CHECK_THROWS_AS(optim::find_optimizer("adamw-fp16+14"), InputError);  // fp16 holds 13
  CHECK_THROWS_AS(optim::find_optimizer("lion"), InputError);
  CHECK_THROWS_AS(optim::find_optimizer("momentum"), InputError);
  CHECK_THROWS_AS(optim::find_optimizer("none"), InputError);
  CHECK_THROWS_AS(optim::find_optimizer("adamw-"), InputError);
  try {
    optim::find_optimizer("lion");
  } catch (const InputError& e) {
    CHECK(listed(e.what(), "expected one of: ", " (FMT") == registry_names());
  }
}

TEST_CASE("registry: defaults are the libraries'", "[optim][registry]") {
  // torch.optim.Adam / AdamW and bitsandbytes Adam8bit / AdamW8bit: lr 1e-3, betas (0.9, 0.999),
  // eps 1e-8, weight_decay 0 (Adam) or 1e-2 (AdamW).
  const auto def = [](const char* name) { return optim::find_optimizer(name).entry->defaults; };
  for (const char* n : {"adamw", "adamw8bit", "adamw-bf16+8"}) {
    INFO(n);
    CHECK(def(n).adam.wd == 1e-2);
    CHECK(def(n).adam.lr == 1e-3);
    CHECK(def(n).adam.beta1 == 0.9);
    CHECK(def(n).adam.beta2 == 0.999);
    CHECK(def(n).adam.eps == 1e-8);
  }
  for (const char* n : {"adam", "adam8bit", "adam-bf16+8", "stableadamw", "sgd", "momentum8bit"}) {
    INFO(n);
    CHECK(def(n).adam.wd == 0.0);
    CHECK(def(n).sgd.wd == 0.0);
  }
  CHECK(def("sgd").sgd.momentum == 0.9);
  CHECK(def("sgd").sgd.dampening == 0.0);
  CHECK_FALSE(def("sgd").sgd.nesterov);
  // --lr and --wd set both styles; 8-bit Momentum's beta1 is --beta1, else --momentum.
  optim::HyperOptions o;
  o.lr = 0.5;
  o.wd = 0.25;
  o.momentum = 0.8;
  const auto& m8 = *optim::find_optimizer("momentum8bit").entry;
  optim::Hyper h = optim::resolve_hyper(m8, o);
  CHECK(h.adam.lr == 0.5);
  CHECK(h.sgd.lr == 0.5);
  CHECK(h.adam.wd == 0.25);
  CHECK(h.sgd.wd == 0.25);
  CHECK(h.adam.beta1 == 0.8);
  o.beta1 = 0.7;
  CHECK(optim::resolve_hyper(m8, o).adam.beta1 == 0.7);
  CHECK(optim::resolve_hyper(m8, optim::HyperOptions{}).adam.beta1 == 0.9);
}

TEST_CASE("registry: GPU column and variants", "[optim][registry]") {
  optim::Config c;
  c.opt = optim::find_optimizer("stableadamw");
  c.st = optim::Storage::bf16;
  CHECK_THROWS_AS(optim::require_gpu_kernel(c), InputError);  // StableAdamW: fp32 only
  c.st = optim::Storage::f32;
  CHECK_NOTHROW(optim::require_gpu_kernel(c));
  for (const char* name : {"adamw8bit", "adam8bit", "momentum8bit"}) {  // bitsandbytes: all three
    c.opt = optim::find_optimizer(name);
    for (optim::Storage st : {optim::Storage::f32, optim::Storage::bf16, optim::Storage::f16}) {
      c.st = st;
      CHECK_NOTHROW(optim::require_gpu_kernel(c));
    }
  }
  c.opt = optim::find_optimizer("adamw");
  c.st = optim::Storage::bf16;
  CHECK_NOTHROW(optim::require_gpu_kernel(c));  // gpu/optim/optim_torch16.cu
  c.st = optim::Storage::f16;
  CHECK_NOTHROW(optim::require_gpu_kernel(c));
  c.opt = optim::find_optimizer("sgd");
  CHECK_NOTHROW(optim::require_gpu_kernel(c));
  c.opt = optim::find_optimizer("adamw");
  c.variant = "torch-fused";
  CHECK_NOTHROW(optim::check_variant(c));  // the fused model covers 16-bit parameters (9.2)
  c.st = optim::Storage::f32;
  CHECK_NOTHROW(optim::check_variant(c));
  c.variant = "torch-order";
  CHECK_THROWS_AS(optim::check_variant(c), InputError);
  c.opt = optim::find_optimizer("adam8bit");
  CHECK_NOTHROW(optim::check_variant(c));
}

TEST_CASE("memory: every registry name, none, and nothing else", "[optim][memory][registry]") {
  for (const auto& e : optim::optimizers()) {
    INFO(e.name);
    optim::MemoryConfig c;
    c.optimizer = std::string(e.example);
    double state = -1;
    for (const auto& r : optim::memory_breakdown(c)) {
      if (r.item == "optimizer state") state = r.bytes_per_param;
    }
    CHECK(state == e.state_bytes);
  }
  optim::MemoryConfig none;
  none.optimizer = "none";
  CHECK(optim::memory_total_per_param(optim::memory_breakdown(none)) == 4.0 + 4.0);
  // Regression: memory.cpp kept its own name list and accepted `momentum` (not an optimizer of
  // exmy step); every name now comes from the registry, plus the documented `none`.
  for (const char* bad : {"momentum", "lion", "adafactorr", "None", ""}) {
    INFO(bad);
    optim::MemoryConfig c;
    c.optimizer = bad;
    CHECK_THROWS_AS(optim::memory_breakdown(c), InputError);
  }
  // A split name fixes the weights: 16-bit codes + k extra bits (+1 with :sr), AdamW states.
  optim::MemoryConfig s;
  s.optimizer = "adamw-fp16+5:sr";
  const auto rows = optim::memory_breakdown(s);
  CHECK(rows[0].bytes_per_param == 2.0);
  CHECK(rows[1].bytes_per_param == 6.0 / 8.0);
  CHECK(optim::memory_total_per_param(rows) == 2.0 + 6.0 / 8.0 + 2.0 + 8.0);
  s.extra_bits = 5;  // repeating the format is fine
  CHECK_NOTHROW(optim::memory_breakdown(s));
  s.extra_bits = 8;  // contradicting it is not
  CHECK_THROWS_AS(optim::memory_breakdown(s), InputError);
  s.extra_bits = -1;
  s.weight_bytes = 4;
  CHECK_THROWS_AS(optim::memory_breakdown(s), InputError);
}

TEST_CASE("exmy step and exmy memory accept every registry name", "[optim][cli][registry]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const std::string d = tmpdir();
  const std::size_t n = 300;
  io::write_npy(d + "/p.npy", io::make_npy(optim_test::normal_values(n, 11)));
  io::write_npy(d + "/g.npy", io::make_npy(optim_test::normal_values(n, 12, 1e-2f)));
  for (const auto& e : optim::optimizers()) {
    const std::string name(e.example);
    INFO(name);
    const std::string out = d + "/" + name;
    CHECK(run("step --optimizer " + name + " --params " + d + "/p.npy --grads " + d +
              "/g.npy --steps 2 --out '" + out + "'") == 0);
    CHECK(exists(out + "/state.json"));
    CHECK(exists(out + "/params.npy"));
    // The entry's first state file (state1, or a family's own name: RMSprop's square_avg).
    optim::Config c;
    c.opt = *optim::lookup_optimizer(name);
    c.hyper = optim::resolve_hyper(e, {});
    optim::State st = optim::init_state(c, std::vector<float>(n, 0.0f));
    CHECK(exists(out + "/" + e.arrays(c, st).front().file + ".npy"));
    CHECK(run("memory --params 1e9 --optimizer " + name) == 0);
  }
  CHECK(run("memory --params 1e9 --optimizer none") == 0);
  CHECK(run("memory --params 1e9 --optimizer momentum") == 2);  // regression (see above)
  CHECK(run("step --optimizer none --params " + d + "/p.npy --grads " + d + "/g.npy --out " + d +
            "/none") == 2);
  CHECK_FALSE(exists(d + "/none"));
  std::system(("rm -rf " + d).c_str());
}

TEST_CASE("usage and error texts list exactly the registry names", "[optim][cli][registry]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const std::string d = tmpdir();
  io::write_npy(d + "/p.npy", io::make_npy(std::vector<float>(8, 1.0f)));
  CHECK(run("step --optimizer lion --params " + d + "/p.npy --grads " + d + "/p.npy --out " + d +
                "/o",
            d + "/err1") == 2);
  const std::string e1 = read_text(d + "/err1");
  CHECK(listed(e1, "expected one of: ", " (FMT") == registry_names());
  CHECK(run("step --params " + d + "/p.npy --grads " + d + "/p.npy --out " + d + "/o",
            d + "/err2") == 2);
  CHECK(listed(read_text(d + "/err2"), "one of: ", " (FMT") == registry_names());
  CHECK(run("memory --params 1e9 --optimizer lion", d + "/err3") == 2);
  const std::string e3 = read_text(d + "/err3");
  CHECK(listed(e3, "expected one of: ", " (FMT") == registry_names());
  CHECK(e3.find(", or none (no optimizer state)") != std::string::npos);
  // The option table's --help lists the names in --optimizer's line (cli/options.hpp); an
  // unknown option points there.
  CHECK(run("memory --params 1e9 --optimizer adamw --bogus", d + "/err4") == 2);
  CHECK(read_text(d + "/err4").find("try --help") != std::string::npos);
  const auto help = testing::run_captured("memory --help", "exmy_registry_help");
  CHECK(help.status == 0);
  CHECK(listed(help.out, "or none: ", " (FMT") == registry_names());
  CHECK_FALSE(exists(d + "/o"));
  std::system(("rm -rf " + d).c_str());
}

TEST_CASE("exmy step --device cuda without a GPU exits 2 and writes nothing",
          "[optim][cli][registry]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const std::string d = tmpdir();
  io::write_npy(d + "/p.npy", io::make_npy(optim_test::normal_values(100, 13)));
  CHECK(run("step --optimizer adamw --device tpu --params " + d + "/p.npy --grads " + d +
            "/p.npy --out " + d + "/o0") == 2);
  CHECK_FALSE(exists(d + "/o0"));
  if (gpu::device_count() > 0) {
    WARN("a GPU is present: the no-GPU assertion is skipped (tests/gpu covers --device cuda)");
  } else {
    for (const auto& e : optim::optimizers()) {
      INFO(e.name);
      CHECK(run("step --optimizer " + std::string(e.example) + " --device cuda --params " + d +
                "/p.npy --grads " + d + "/p.npy --out " + d + "/o1") == 2);
      CHECK_FALSE(exists(d + "/o1"));
    }
  }
  std::system(("rm -rf " + d).c_str());
}
