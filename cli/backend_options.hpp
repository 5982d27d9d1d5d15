// The options that name a backend plugin request, shared by `exmy fuzz` and `exmy verify
// --backend` (so that the two spell, check and document them alike): the library, the operation,
// the format and rounding, which entry point, and how long a call may take.
#pragma once

#include <string>

#include "cli/cli_util.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"

namespace exmy::cli {

struct BackendRequest {
  std::string library, op, format_name, round_text, overflow_text;
  int timeout = 600;          // seconds one backend call may take
  bool device_entry = false;  // --entry device: exmy_backend_cast_f32_device
};

// --device: exmy's reference runs on the CPU. `--device cuda` elsewhere picks exmy's engine; a
// plugin's device entry point is --entry device, which the refusal names.
inline void check_reference_device(const std::string& v) {
  if (v == "cpu") return;
  if (v == "cuda") {
    throw InputError(
        "--device cuda: exmy's reference runs on the CPU; to call the plugin's "
        "device entry point use --entry device");
  }
  throw InputError("--device '" + v + "': expected cpu");
}

inline void add_backend_options(Options& opts, BackendRequest& r) {
  const BackendRequest d;
  opts.value({"--backend"}, "LIB.so", "the plugin under test (include/exmy/backend.h)",
             Options::kRequired, [&r](const std::string& v) { r.library = v; })
      .value({"--op"}, "cast", "the operation (ABI 1: cast, exmy_backend_cast_f32)",
             Options::kRequired, [&r](const std::string& v) { r.op = v; })
      .value({"--format"}, "F", "the target format (a float format of at most 16 bits)",
             Options::kRequired, [&r](const std::string& v) { r.format_name = v; })
      .value({"--round"}, "MODE[+POLICY]",
             "rounding: " + round_mode_list(", ") + "; +POLICY sets the overflow policy",
             Options::kRequired, [&r](const std::string& v) { r.round_text = v; })
      .value({"--overflow"}, "POLICY", "overflow policy: " + overflow_list(", "),
             "the +POLICY of --round, else " + std::string(overflow_name(Rounding{}.overflow)),
             [&r](const std::string& v) { r.overflow_text = v; })
      .value({"--entry"}, "host|device",
             "the plugin's entry point: host (exmy_backend_cast_f32 on host arrays) or device "
             "(exmy_backend_cast_f32_device on CUDA device arrays); not --device, which names "
             "where exmy itself runs",
             d.device_entry ? "device" : "host",
             [&r](const std::string& e) {
               if (e != "host" && e != "device") {
                 throw InputError("--entry '" + e + "': expected host or device");
               }
               r.device_entry = e == "device";
             })
      .value({"--device"}, "cpu",
             "where exmy computes the reference codes (only cpu; for the plugin's device entry "
             "point use --entry device)",
             "cpu", check_reference_device)
      .value({"--timeout"}, "SECONDS", "the most one backend call may take (1 to 86400)",
             std::to_string(d.timeout), [&r](const std::string& v) {
               r.timeout = static_cast<int>(parse_uint(v, "--timeout", 86400));
               if (r.timeout < 1) throw InputError("--timeout '0': expected 1 to 86400 seconds");
             });
}

}  // namespace exmy::cli
