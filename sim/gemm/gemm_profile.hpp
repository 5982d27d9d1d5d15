// A GPU GEMM library's measured profile (docs/SEMANTICS.md 15.4, 15.6): per input type and shape
// the accumulation model exmy fitted and verified there ("entries", written by `exmy probe
// gemm`), and per input type, output type and shape the kernel the library launched ("launch",
// written by `exmy probe gemm --launch`, tools/gemm_launch.py). `--accum cublas-sm90` reads the
// compiled-in H100 profile, or the one $EXMY_GEMM_PROFILE names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
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

struct GemmProfile {
  std::string source;  // the file (or the compiled-in profile's name), for messages
  std::vector<ProfileEntry> entries;
  // Keyed by launch_key(in, out, M, N, K).
  std::map<std::string, LaunchRecord> launch;
  std::string launch_device;  // the launch records' provenance (info.device, info.cublas)
};

std::string launch_key(const std::string& in, const std::string& out, std::size_t M, std::size_t N,
                       std::size_t K);

// The launch record of that GEMM, or nullptr.
const LaunchRecord* find_launch(const GemmProfile& p, const std::string& in, const std::string& out,
                                std::size_t M, std::size_t N, std::size_t K);

// Parses a profile (JSON with "entries", "launch" or both). InputError naming `source` and the
// field (e.g. "launch.records[\"bf16>fp32\"][12]: ...") for anything malformed.
GemmProfile parse_gemm_profile(const std::string& text, const std::string& source);

// Adds `more`'s entries and launch records to `into` (its launch records replace those of the
// same GEMM).
void merge_gemm_profile(GemmProfile& into, const GemmProfile& more);

// The profile `--accum cublas-sm90` reads: the compiled-in H100 profile and launch records
// (golden/profiles/sm90/cublaslt-h100-gemm.json, cublaslt-h100-launch.json), or the file
// $EXMY_GEMM_PROFILE names (read once, in place of both).
const GemmProfile& cublas_sm90_profile();

}  // namespace exmy::gemm
