// The state directory of an optimizer run (docs/SEMANTICS.md 11.5): params.npy, the entry's state
// arrays (registry.hpp: save_state / load_state) and state.json, the run's scalars, written last.
// The whole file format lives here; `exmy step` (and anything else that saves or resumes a run)
// only calls it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/optim/optim.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {

// The scalars state.json holds.
struct RunRecord {
  std::string optimizer;  // the --optimizer name as typed
  std::uint64_t n = 0;    // parameter count
  long step = 0;          // steps applied so far (skipped ones not counted)
  int block = 256;
  bool is_8bit = false;  // 8-bit block-wise states (else their 32-bit fallback or none)
  std::uint64_t seed = 0;
  DynamicScaler scaler;  // scale and growth_tracker of --loss-scale dynamic
  std::string variant = "default";
  std::string compat;  // "" = the default profile (written "default")
  // RMS_t of the applied steps, where the entry reports it, and the indices of the steps skipped
  // for an inf/NaN gradient: the first kHistory of each, with their total counts. Bounded, so
  // that a run of 2^30 steps neither grows memory without bound nor writes a state.json larger
  // than the 64 MiB it reads back (docs/SEMANTICS.md 11.0).
  static constexpr std::size_t kHistory = 4096;
  std::vector<float> rms;
  std::vector<long> skipped;
  std::uint64_t rms_count = 0, skipped_count = 0;
  void note_rms(float v) {
    if (rms.size() < kHistory) rms.push_back(v);
    ++rms_count;
  }
  void note_skipped(long k) {
    if (skipped.size() < kHistory) skipped.push_back(k);
    ++skipped_count;
  }
};

// The largest step counter: state.json holds at most this; a run that would pass it is refused
// before it starts (never a state written that its reader refuses).
inline constexpr long kMaxStepCount = INT64_MAX / 2;

// What the continuing run asks for, checked against what state.json recorded: a profile, a
// variant or a parameter storage that differs is refused by name (the resumed run would silently
// be another computation); `steps` must fit below kMaxStepCount.
struct ResumeRequest {
  std::string compat;  // --compat as given ("" = the default profile)
  long steps = 0;      // --steps
};

// state.json of run c with record r, one line ending in a newline (NaN/inf rms as null).
std::string state_json(const Config& c, const RunRecord& r);

// What a run continues from: the step count and the loss scaler of an earlier run's state.json.
struct Resume {
  long step = 0;
  DynamicScaler scaler;
};
// Reads the state directory `dir` written by an earlier run and checks it against run c on n
// parameters (the optimizer `name` as typed, the element count, block size and 8-bit layout of
// `fresh`, the split format), then loads its arrays into s (load_state; `p` read from
// `params_path`, `shape` the parameters'), and checks the recorded variant, compat profile and
// parameter storage against c and `want` (ResumeRequest). InputError naming the file and the field
// otherwise; a missing directory is an error, never a fresh start.
Resume resume_state_dir(const Config& c, std::string_view name, const std::string& dir,
                        std::span<const float> p, const std::string& params_path,
                        const std::vector<std::size_t>& shape, State& s, const ResumeRequest& want);

// Writes the run's directory `out` (created if missing): params.npy of shape `shape`, every state
// array and state.json (`json`, from state_json), all staged inside `out` and renamed into place
// together, state.json last: a failure on any file leaves the earlier contents of `out` as they
// were, and a state.json is never newer than its arrays.
void write_state_dir(const std::string& out, const Config& c, const std::vector<std::size_t>& shape,
                     std::span<const float> p, State& s, const std::string& json);

}  // namespace exmy::optim
