// The quantization schemes, one registry entry each (docs/SEMANTICS.md 7.12): the scheme's name
// and grammar, its option checks, the plan's group geometry and scale rule, the state file's
// shape, whether its codes are always packed, and which GPU launcher runs it. parse_scheme,
// scheme_name, validate_options, make_plan, group_count / group_of, state_shape, check_shape
// (sim/quant), the CLI's --scheme help and packing, the oracle bridge and the GPU dispatch
// (gpu/quant) read the entry; adding a scheme is one entry here (plus its Granularity id in
// sim/quant/quantize.hpp). Host only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/native/quant_plan.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::quant {

// The GPU launchers a scheme can name (gpu/quant/detail_launch.cuh's table, indexed by this id):
// contiguous groups (tensor, rows, columns, 1-d blocks: the element kernels of each target kind)
// or 2-d tiles (one warp per tile).
enum class GpuLauncher : std::uint8_t { contiguous, tile };

struct SchemeEntry {
  Granularity kind;     // the scheme's id
  const char* grammar;  // as --help and errors spell it: "block:RxC"
  const char* limits;   // appended in the parse error ("(R, C in 1..4096)"), or ""
  // The scheme of `name` when it is this entry's (false otherwise; never throws).
  bool (*parse)(std::string_view name, Scheme& out);
  std::string (*name)(const Scheme& s);
  // Groups: the geometry group_count / group_of and the kernels read (sizes in the Scheme).
  native::GroupShape groups;
  // The state array's shape for an input of `shape`.
  std::vector<std::size_t> (*state_shape)(const Scheme& s, const std::vector<std::size_t>& shape);
  // The scheme's own option checks (InputError naming the option); the switches below are
  // checked by validate_options for every scheme.
  void (*validate)(const Options& opt);
  // The scheme's shape rule (InputError otherwise); nullptr: every shape.
  void (*check_shape)(const Options& opt, const std::vector<std::size_t>& shape);
  // The plan's scale rule for these options (validated).
  native::ScaleRule (*rule)(const Options& opt);
  bool scale_format;  // accepts --scale-format
  bool scale_mode;    // accepts --scale-mode
  bool two_level;     // accepts --two-level / --tensor-amax / --tensor-scale
  bool packed_codes;  // codes always two per byte (the CLI implies --pack)
  GpuLauncher gpu;
};

// Every scheme, in the order of the usage texts.
std::span<const SchemeEntry> schemes();
// The entry of a scheme id (every Granularity has one).
const SchemeEntry& scheme_entry(Granularity kind);
inline const SchemeEntry& scheme_entry(const Scheme& s) {
  return scheme_entry(s.kind);
}
// "tensor|rowwise|..." (the grammars joined by `sep`), for --help.
std::string scheme_list(std::string_view sep);

}  // namespace exmy::quant
