// A GPU GEMM library's measured profile (docs/SEMANTICS.md 15.4, 15.6): per input type and shape
// the accumulation model exmy fitted and verified there ("entries", written by `exmy probe
// gemm`), and per input type, output type and shape the kernel the library launched ("launch",
// written by `exmy probe gemm --launch`, tools/gemm_launch.py). `--accum cublas-sm90` reads the
// compiled-in H100 profile, or the one $EXMY_GEMM_PROFILE names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace exmy::gemm {

struct ProfileEntry {
  std::string type;
  std::size_t M = 0, N = 0, K = 0;
  std::string model;   // empty: measured, but no model of exmy's family reproduced it
  std::string kernel;  // the library's kernel there (torch.profiler), when recorded
};

// One launch (tools/gemm_launch.py): the GEMM kernel's family (the name rule tables are keyed
// by), its name without parameters (the tile), the kernels that followed it ("splitKreduce/f32",
// "splitKreduce/bf16", ..., "" for none) and its gridDim.z (a split-K kernel's part count).
struct LaunchRecord {
  std::string family, key, reduce;
  std::uint64_t split = 1;
};

// A second GPU's launch records as a delta against the profile's own (tools/gemm_launch.py
// --base; SEMANTICS 15.6): its launch is the base GPU's at every GEMM but those in `differ`
// (another kernel, grid or block there, or a GEMM the base lacks) and in `absent` (not recorded
// on this GPU).
struct LaunchGpu {
  std::string name;    // gpu_name(device): "h200"
  std::string device;  // info.device
  std::string base_device;
  std::map<std::string, LaunchRecord> differ;
  std::set<std::string> absent;
};

struct GemmProfile {
  std::string source;  // the file (or the compiled-in profile's name), for messages
  std::vector<ProfileEntry> entries;
  // The GPU the entries were measured on (the profile's "device"; "" when it names none: then
  // the launch records' GPU).
  std::string entries_device;
  // Keyed by launch_key(in, out, M, N, K): the base GPU's records (launch_device).
  std::map<std::string, LaunchRecord> launch;
  std::string launch_device;          // the launch records' provenance (info.device, info.cublas)
  std::vector<LaunchGpu> other_gpus;  // further GPUs, as deltas against `launch`
};

// The short name of a GPU for --accum cublas-sm90-NAME: the word after "NVIDIA " lowercased
// ("NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA H200" -> "h200"); other names lowercased with
// spaces as '-'.
std::string gpu_name(const std::string& device);

// The names of the GPUs whose launch records the profile holds (the base first); empty when it
// holds none.
std::vector<std::string> launch_gpus(const GemmProfile& p);

// The launch record of GEMM `key` on GPU `gpu` (a name of launch_gpus), or nullptr. InputError
// for a GPU the profile does not hold (naming those it does).
const LaunchRecord* find_launch_on(const GemmProfile& p, const std::string& gpu,
                                   const std::string& key);

// Whether the GPUs that recorded GEMM `key` disagree (a GPU's record differs from another's).
bool launches_differ(const GemmProfile& p, const std::string& key);

// The launch records' input type of a GEMM with fp32 tile scales (SEMANTICS 15.7): the operands'
// format and the tile pair, "e4m3fn:1x128.128x128" (A's tiles . B's tiles); the three pairs
// torch._scaled_mm takes are the ones recorded.
bool is_blockwise_type(const std::string& t);

std::string launch_key(const std::string& in, const std::string& out, std::size_t M, std::size_t N,
                       std::size_t K);

// The launch record of that GEMM, or nullptr.
const LaunchRecord* find_launch(const GemmProfile& p, const std::string& in, const std::string& out,
                                std::size_t M, std::size_t N, std::size_t K);

// Parses a profile (JSON with "entries", "launch" or both; a launch section with "base" is a
// delta, kept in other_gpus until merged into a profile holding its base). InputError naming
// `source` and the field (e.g. "launch.records[\"bf16>fp32\"][12]: ...") for anything malformed.
GemmProfile parse_gemm_profile(const std::string& text, const std::string& source);

// Adds `more`'s entries and launch records to `into` (its launch records replace those of the
// same GEMM; a delta is added as a further GPU and must be against `into`'s launch device:
// InputError otherwise).
void merge_gemm_profile(GemmProfile& into, const GemmProfile& more);

// The profile `--accum cublas-sm90` reads: the compiled-in H100 profile and launch records and
// the H200's launch records as a delta (golden/profiles/sm90/cublaslt-h100-gemm.json,
// cublaslt-h100-launch.json, cublaslt-h200-launch.json), or the file $EXMY_GEMM_PROFILE names
// (read once, in place of all three; a delta there is refused unless its base is the file's).
const GemmProfile& cublas_sm90_profile();

}  // namespace exmy::gemm
