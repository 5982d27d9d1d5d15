// The optimizer registry (docs/SEMANTICS.md 9.9): one table entry per optimizer name that
// `exmy step` and `exmy memory` accept, holding its library defaults, its saved state arrays, its
// memory per parameter, its CPU step and which parameter dtypes have a GPU kernel. `exmy step`,
// `exmy memory`, the GPU host wrapper (gpu/optim/optim_host.hpp) and tests read this table only;
// the names in usage and error texts are generated from it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sim/optim/optim.hpp"

namespace exmy::optim {

// What a step does to one tensor; entries of one family share their step and state layout.
// bnb1: bitsandbytes' one-state RMSprop/Adagrad/Lion (the entry's bnb_op), 8-bit or 32-bit.
// ademamix: bitsandbytes' AdEMAMix, 8-bit or 32-bit. `registered`: a family of
// cmake/ExmyOptimFamilies.cmake, described by its FamilyDef alone (nothing switches on it).
enum class Family {
  adam,
  sgd,
  adam8,
  momentum8,
  bnb1,
  ademamix,
  stable,
  split_adam,
  split_sgd,
  registered
};

// The hyperparameter options common to the families (exmy step's --lr ... --beta3), as bits.
enum HyperBit : unsigned {
  kLr = 1u << 0,
  kBeta1 = 1u << 1,
  kBeta2 = 1u << 2,
  kEps = 1u << 3,
  kWd = 1u << 4,
  kMomentum = 1u << 5,
  kDampening = 1u << 6,
  kNesterov = 1u << 7,
  kAlpha = 1u << 8,
  kBeta3 = 1u << 9,
};

// A hyperparameter only some families read ("--centered"): declared by the family, its option
// generated in exmy step's table, its value in Hyper::extra at the family's index.
struct ExtraHyper {
  std::string_view option;  // "--centered"
  std::string_view help;
  bool flag = false;  // a flag: 1 when given; else a value option
  double def = 0.0;   // the library default (NaN: Python's None, the option not given)
  double lo = 0.0, hi = 0.0;
  bool hi_open = true;  // value options: the domain [lo, hi) or [lo, hi]
};
inline constexpr int kMaxExtraHyper = 6;

// Hyperparameters of one run: the union of what the families read (Adam-style: lr, betas, eps,
// wd; SGD-style: lr, momentum, dampening, nesterov, wd), and the family's extra ones.
struct Hyper {
  AdamHyper adam;
  SgdHyper sgd;
  std::array<double, kMaxExtraHyper> extra{};
};

// Hyperparameters given on the command line; the rest take the entry's defaults.
struct HyperOptions {
  // alpha: RMSprop's smoothing constant (bitsandbytes passes it as beta1).
  // alpha: AdEMAMix's α; beta3: AdEMAMix's β3.
  std::optional<double> lr, beta1, beta2, eps, wd, momentum, dampening, alpha, beta3;
  bool nesterov = false;
  // Extra hyperparameters given (ExtraHyper::option, value; a flag's value is 1).
  std::vector<std::pair<std::string, double>> extra;
};

struct Config;
struct State;
struct Entry;

// One op of `exmy verify --campaign steps` generated from a family (sim/verify runs the entry's
// CPU step against the family's step oracle): a name, the parameters' storage, the kernels
// modelled and the hyperparameter configurations run.
struct CampaignConfig {
  std::string label;
  Hyper hyper;
};
struct CampaignOp {
  std::string name;
  Storage st = Storage::f32;
  native::TorchKernels kernels = native::TorchKernels::cpu;
  std::vector<CampaignConfig> configs;
  // At least this many steps at every depth (RAdam rectifies from step 6 on); 0: the depth's.
  long min_steps = 0;
};

// What the layers need to know of one family besides its entries: the one place that names its
// launcher (gpu/optim's table, by `name`), its step oracle (sim/oracle/steps' table, by `name`),
// its compat group, the options it reads and their domains, its campaign ops.
struct FamilyDef {
  std::string_view name;
  // The compatibility profiles that cover it (sim/format/compat.hpp): kTorchOptim or
  // kBitsandbytes, "" for none. A torch.optim family is covered by the profiles whose kernels it
  // models (bit k of torch_kernels: native::TorchKernels k).
  std::string_view library = {};
  unsigned torch_kernels = 0;
  unsigned reads = 0;  // HyperBit: the common options it reads
  std::span<const ExtraHyper> extras = {};
  // fp32 state arrays hold values of the parameters' dtype (torch.optim's zeros_like(param)); the
  // GPU keeps them as 16-bit codes for bf16/fp16 parameters.
  bool states_param_dtype = false;
  // The GPU keeps bf16/fp16 parameters and gradients as 16-bit codes.
  bool param_codes16 = false;
  // InputError for a value outside a domain the library enforces (check_domain).
  void (*domains)(const Entry& e, const Hyper& h) = nullptr;
  // Quirks of the mapping from options to Hyper after the common one (may be null).
  void (*resolve)(const Entry& e, const HyperOptions& o, Hyper& h) = nullptr;
  // Whether the saved array `file` is never negative (a reloaded state is checked); may be null.
  bool (*nonnegative)(const Entry& e, std::string_view file) = nullptr;
  // The campaign's ops for entry e (null: the campaign's hand-written ops of sim/verify).
  std::vector<CampaignOp> (*campaign)(const Entry& e) = nullptr;
};
// InputError naming `what` unless lo <= v and v < hi (v <= hi where !hi_open), v as typed.
void check_domain(double v, const char* what, double lo, double hi, bool hi_open);
// torch.optim's Adam-family constructor checks (lr, eps >= 0; 0 <= betas < 1; weight_decay >=
// 0), shared by Adam/AdamW, StableAdamW, NAdam and RAdam (a family's own options carry their
// ranges in ExtraHyper).
void torch_adam_domains(const Entry& e, const Hyper& h);
// The zero state of two fp32 state arrays of the parameters' size (s1, s2).
void init_two_states(const Config& c, std::span<const float> p, State& s);

// One saved state array: `<file>.npy`, a view of the host vector that holds it, and whether it is
// saved with the parameters' shape (else 1-d: per-block absmax, packed extra-bit words).
struct StateArray {
  const char* file;
  std::variant<std::vector<float>*, std::vector<std::uint8_t>*, std::vector<std::uint16_t>*,
               std::vector<std::uint32_t>*>
      data;
  bool param_shaped;
  // > 1: saved with a leading dimension of this many rows, (stack, *shape) or (stack, n/stack)
  // (AdEMAMix's state1 and absmax1 hold m1 and m2 as bitsandbytes stacks them).
  int stack = 1;
  // Non-empty: saved with this shape (Adafactor's row_var (..., R, 1) and col_var (..., 1, C)).
  std::vector<std::size_t> shape = {};
};

struct Entry {
  // The name as typed. A split entry (`split`) is a family of names: its name ends in "-FMT",
  // written `<prefix>FMT` with FMT a split format of section 6 ("adamw-bf16+8:sr").
  std::string_view name;
  bool split = false;
  Family family;
  const FamilyDef* def = nullptr;  // never null in the table
  bool decoupled = false;          // decoupled weight decay (AdamW); false: Adam's L2 / coupled
  Hyper defaults;                  // the library defaults (section 9.9)
  std::string_view variants = "";  // named variant besides "default" (section 12), "" if none
  double state_bytes;              // section 9.8: optimizer-state bytes per parameter
  int absmax_states = 0;           // 8-bit states, each with one fp32 absmax per block
  bool reports_rms = false;        // the step returns RMS_t (StableAdamW), reported in state.json
  native::Bnb1Op bnb_op{};         // bnb1: the operation
  bool state32 = false;  // bnb1, ademamix: 32-bit states at every size (the *32bit optimizers)
  // exmy memory: the state is factored by the parameters' shape (Adafactor; state_bytes is its
  // 1-d figure with fp32 weights: one state value of the weights' dtype per parameter).
  bool factored_state = false;
  // Parameter dtypes (by Storage: fp32, bf16, fp16) for which gpu/optim/optim.hpp has a kernel;
  // gpu/optim/optim_host.cu runs it (a pointer cannot live here: sim/ does not link gpu/).
  std::array<bool, 3> gpu;
  std::string_view example;  // one full name (split entries: a concrete format)
  // Zero state as the library creates it, for n parameters p.
  void (*init)(const Config& c, std::span<const float> p, State& s);
  // The arrays saved for this state, in file order.
  std::vector<StateArray> (*arrays)(const Config& c, State& s);
  // One step t (1-based) on the host; returns RMS_t where reports_rms, else 0.
  float (*cpu_step)(const Config& c, long t, std::span<float> p, std::span<const float> g,
                    State& s);
};

// The table, in the order usage texts list it: the core entries, then those of each family of
// cmake/ExmyOptimFamilies.cmake in its order.
std::span<const Entry> optimizers();
// Defined by sim/optim/family_<N>.cpp for each family N of cmake/ExmyOptimFamilies.cmake.
#define EXMY_OPTIM_FAMILY_ENTRIES(N) std::span<const Entry> family_entries_##N()
// "adamw, adam, ..., adamw-FMT, adam-FMT, sgd-FMT (FMT: bf16+K or fp16+K, K extra bits, :sr for
// stochastic rounding)": the names of every entry, for usage and error texts.
std::string optimizer_names();

struct Selected {
  const Entry* entry = nullptr;
  std::string name;   // as typed
  SplitFormat split;  // split entries only
};
// The entry of `name`, or none; a split entry's name with a malformed FMT is an InputError.
std::optional<Selected> lookup_optimizer(std::string_view name);
// The entry of `name`; InputError naming it and listing optimizer_names() if none matches.
Selected find_optimizer(std::string_view name);

// Whether the entry's family keeps 8-bit block-wise states (block size and fallback apply).
bool is_blockwise(const Entry& e);

// The settings of one run after defaults, as the step reads them.
struct Config {
  Selected opt;
  Hyper hyper;
  Storage st = Storage::f32;  // the parameters' dtype (not used by split entries)
  int block = 256;
  bool small_fallback = true;
  std::string variant = "default";
  std::uint64_t seed = 0;
  // The parameters' shape (C order); empty: one dimension of the parameters' length. Read by the
  // families whose step is not per element (Adafactor factors >= 2-d parameters).
  std::vector<std::size_t> shape;
};
// "fp32", "bf16", "fp16": the --param-dtype spelling.
std::string_view dtype_name(Storage st);
// InputError naming the optimizer and dtype unless the entry has a GPU kernel for c.st.
void require_gpu_kernel(const Config& c);
// The entry's defaults overridden by `given` (8-bit Momentum's beta1 is its momentum).
Hyper resolve_hyper(const Entry& e, const HyperOptions& given);
// InputError unless `c.variant` is "default" or one of the entry's, and the variant's storage
// rule holds (torch-fused: fp32 parameters).
void check_variant(const Config& c);
// The hyperparameter domains PyTorch's constructors enforce (torch.optim.Adam / AdamW / SGD:
// "Invalid learning rate", "Invalid beta parameter at index 0", ...; bitsandbytes and optimi
// check the same ones): a value outside is an InputError naming it (docs/SEMANTICS.md 9.9).
// Only the hyperparameters the entry's family reads are checked.
void check_hyper_domains(const Entry& e, const Hyper& h);
// Applies the --compat profile `profile` (sim/format/compat.hpp) to the run: the PyTorch kernels
// (torch-cpu/-cuda/-cuda-foreach/-cuda-fused) or bitsandbytes' kernels (bnb-cuda) the profile
// models for this optimizer (docs/SEMANTICS.md 9.2-9.4, 12). "" and "default" change nothing. A
// profile that does not cover the optimizer is an InputError, never a fallback to the default;
// so is a profile that models other kernels together with a --variant. The CLI, the Python module
// and the golden corpus call this one function.
void apply_compat(Config& c, std::string_view profile);

// torchao's low-bit Adam states (sim/optim/family_torchao.cpp): exp_avg, exp_avg_sq and
// max_exp_avg_sq, each quantized (codes, one fp32 scale per block) or plain (values of the
// parameters' dtype, as fp32).
struct TorchaoState {
  bool quantized = false;
  std::array<std::vector<std::uint8_t>, 3> codes;
  std::array<std::vector<float>, 3> scale, plain;
};

// The tensor state of one optimizer; each family uses the members its `arrays` lists.
struct State {
  std::vector<float> s1, s2;  // fp32 moments: Adam m, v; SGD buf; StableAdamW v, u
  std::vector<float> s3;      // a third fp32 state where a family keeps one
  Bnb8State bnb;              // 8-bit states (or their 32-bit fallback)
  SplitTensor split;          // split-format parameters (hi codes, extra words)
  TorchaoState ao;            // torchao's quantized or plain states
};

// Zero state for p (split entries: p split into the format with c.seed).
State init_state(const Config& c, std::span<const float> p);
// Reads every array of `arrays` from dir/<file>.npy; each must have the fresh state's length and
// the shape save_state gives it (`shape`, the parameters', for param-shaped arrays; else 1-d).
// Split entries: `p` (read from `params_path`) must equal the joined loaded parameters (the state
// is authoritative).
void load_state(const Config& c, const std::string& dir, std::span<const float> p,
                const std::string& params_path, const std::vector<std::size_t>& shape, State& s);
// Writes every array to dir/<file>.npy (each atomically), param-shaped ones with `shape`.
void save_state(const Config& c, const std::string& dir, const std::vector<std::size_t>& shape,
                State& s);
// The parameters after the steps: p itself, or the joined split tensor.
void final_params(const Config& c, const State& s, std::span<float> p);

// Every NaN the run writes (parameters, fp32 state arrays, the 16-bit part of split parameters)
// made x86-64's default NaN, 0xFFC00000 / bf16 0xFFC0 / fp16 0xFE00 (docs/SEMANTICS.md 9.1): the
// engines agree on which elements are NaN but not on their bits (CUDA's NaN is 0x7FFFFFFF, and a
// non-x86 host has its own), so the files of `exmy step` are the same on every engine and host.
void canonical_nans(const Config& c, State& s, std::span<float> p);

// Runs one run's steps on one engine (CPU: the entry's cpu_step; GPU: gpu/optim/optim_host.hpp).
class Stepper {
 public:
  virtual ~Stepper() = default;
  // Step t (1-based) with gradient g; returns RMS_t where the entry reports it, else 0.
  virtual float step(long t, std::span<const float> g) = 0;
  // Brings the parameters and the state back into the host arrays given at construction.
  virtual void finish() = 0;
};
// The CPU engine on host arrays p and s (held by reference until finish).
std::unique_ptr<Stepper> cpu_stepper(const Config& c, std::span<float> p, State& s);

}  // namespace exmy::optim
